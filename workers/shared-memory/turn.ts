// Who decides whether a call sent to a warm worker runs there: the worker, as
// its turn comes, or the pack process, taking it back to run elsewhere (it waited too long, or
// was stopped). A message cannot settle it: a worker busy in synchronous pack code reads no
// message until that code returns, and a call taken back by message would wait for it, or, its
// turn come first, run although it had been stopped. Each side moves the call's turn out of
// WAITING at most once, with one compare-and-exchange: whichever moves it first has decided,
// and the other sees that it lost.
//
// Layout: one SharedArrayBuffer per pool of Int32 slots, made by the pack process and handed to
// each of its workers with their setup (taken out of workerData before pack code loads). A call
// sent to a worker holds a slot (CallTask.turn, the slot's index) from then until Piscina
// settles its task, the call's or its stand-in's: a slot is given again only once its worker
// is done with it. A slot's value:
//   0 WAITING    neither side has decided yet (set as the slot is given)
//   1 STARTED    the worker took its turn: the call runs (or answers not-run itself)
//   2 TAKEN_BACK the pack process took it back: the worker skips it (not-run)

const WAITING = 0
const STARTED = 1
const TAKEN_BACK = 2

/** The pack process's side: the pool's slots, and which are free. */
export type Turns = {
  buffer: SharedArrayBuffer
  /** A free slot, set to WAITING; undefined when every slot is held (the call then waits elsewhere). */
  claim(): number | undefined
  /** Its task has settled: the slot may be given again. */
  release(slot: number): void
  /** True when the call holding `slot` will never run on its worker (its turn had not come). */
  takeBack(slot: number): boolean
}

export function createTurns(slots: number): Turns {
  const buffer = new SharedArrayBuffer(4 * slots)
  const view = new Int32Array(buffer)
  const free = Array.from({ length: slots }, (_, i) => slots - 1 - i)
  return {
    buffer,
    claim() {
      const slot = free.pop()
      if (slot !== undefined) Atomics.store(view, slot, WAITING)
      return slot
    },
    release: (slot) => void free.push(slot),
    takeBack: (slot) => Atomics.compareExchange(view, slot, WAITING, TAKEN_BACK) === WAITING,
  }
}

/** The worker, as the call's turn comes: true when it is the worker's to run (not taken back). */
export function takeTurn(view: Int32Array, slot: number): boolean {
  return Atomics.compareExchange(view, slot, WAITING, STARTED) === WAITING
}
