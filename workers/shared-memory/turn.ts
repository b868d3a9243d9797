// Who decides whether a call sent to a warm worker runs there: the worker, as
// its turn comes, or the pack process, taking it back to run elsewhere (it waited too long, or
// was stopped). A message cannot settle it: a worker busy in synchronous pack code reads no
// message until that code returns, and a call taken back by message would wait for it, or, its
// turn come first, run although it had been stopped. Each side moves the call's turn out of
// WAITING at most once, with one compare-and-exchange: whichever moves it first has decided,
// and the other sees that it lost.
//
// The slot also tells a worker about to exit whether the pack process has read the answer it
// posted last. A call waiting behind another starts once the answer ahead is posted, not read;
// should the worker then exit (the call behind calls process.exit), Piscina fails the call
// ahead without reading that answer. So the worker's exit waits until it has been read.
//
// Layout: one SharedArrayBuffer per pool, two Int32 per slot, made by the pack process and
// handed to each of its workers with their setup (taken out of workerData before pack code
// loads). A call sent to a worker holds a slot (CallTask.turn, the slot's index) from then until
// Piscina settles its task, the call's or its stand-in's: a slot is given again only once its
// worker is done with it. Int32 2·slot, the state:
//   0 WAITING    neither side has decided yet (set as the slot is given)
//   1 STARTED    the worker took its turn: the call runs (or answers not-run itself)
//   2 TAKEN_BACK the pack process took it back: the worker skips it (not-run)
//   3 SETTLED    the pack process has read how its task settled (set as the slot is released)
// Int32 2·slot + 1, the epoch: one more each time the slot is given, so that a worker waiting
// for a call's SETTLED does not mistake the next holder of the slot for it.

const WAITING = 0
const STARTED = 1
const TAKEN_BACK = 2
const SETTLED = 3
/** How long one wait for SETTLED lasts before the epoch is read again. */
const WAIT_STEP_MS = 10
// Taken as this module loads, before any pack module: pack code may replace the global.
const wait = Atomics.wait

/** The pack process's side: the pool's slots, and which are free. */
export type Turns = {
  buffer: SharedArrayBuffer
  /** A free slot, set to WAITING; undefined when every slot is held (the call then waits elsewhere). */
  claim(): number | undefined
  /** Its task has settled, and this process has read how: the slot may be given again. */
  release(slot: number): void
  /** True when the call holding `slot` will never run on its worker (its turn had not come). */
  takeBack(slot: number): boolean
}

/** A turn a worker took: its slot, and which holder of that slot it was. */
export type Turn = { slot: number; epoch: number }

export function createTurns(slots: number): Turns {
  const buffer = new SharedArrayBuffer(8 * slots)
  const view = new Int32Array(buffer)
  const free = Array.from({ length: slots }, (_, i) => slots - 1 - i)
  return {
    buffer,
    claim() {
      const slot = free.pop()
      if (slot === undefined) return undefined
      Atomics.add(view, 2 * slot + 1, 1)
      Atomics.store(view, 2 * slot, WAITING)
      return slot
    },
    release(slot) {
      Atomics.store(view, 2 * slot, SETTLED)
      Atomics.notify(view, 2 * slot)
      free.push(slot)
    },
    takeBack: (slot) => Atomics.compareExchange(view, 2 * slot, WAITING, TAKEN_BACK) === WAITING,
  }
}

/** The worker, as the call's turn comes: the turn when it is the worker's to run, undefined when it was taken back. */
export function takeTurn(view: Int32Array, slot: number): Turn | undefined {
  if (Atomics.compareExchange(view, 2 * slot, WAITING, STARTED) !== WAITING) return undefined
  return { slot, epoch: Atomics.load(view, 2 * slot + 1) }
}

/**
 * The worker, about to exit: waits, `ms` at most, until the pack process has read how the call
 * that took `turn` settled (a call that ran, whose answer this worker has posted).
 */
export function awaitSettled(view: Int32Array, turn: Turn, ms: number): void {
  for (let waited = 0; waited < ms; waited += WAIT_STEP_MS) {
    if (Atomics.load(view, 2 * turn.slot + 1) !== turn.epoch) return
    if (wait(view, 2 * turn.slot, STARTED, WAIT_STEP_MS) === 'not-equal') return
  }
}
