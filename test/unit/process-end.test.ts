// A pack process has ended once it has exited and its channel has closed (src/pool/process-end.ts),
// never on its stdio's 'close': a child that outlives it may hold its pipes, and that held a warm
// group's calls and a strict call's core for as long (stop 29).
import { spawn } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { whenEnded } from '../../src/pool/process-end.js'
import { within } from '../helpers/host.js'

/** A process that starts a grandchild holding its stdio for `holdMs`, then exits at once. */
function exitsLeavingItsPipesHeld(holdMs: number) {
  const grandchild = `require('node:child_process').spawn(process.execPath, ['-e', 'setTimeout(() => {}, ${holdMs})'], { stdio: 'inherit', detached: true }).unref()`
  return spawn(process.execPath, ['-e', grandchild], { stdio: ['pipe', 'pipe', 'pipe'] })
}

function timed(child: ReturnType<typeof spawn>, closePipesAfterMs?: number) {
  let endedAt: number | undefined
  let endedWith: unknown
  let ended!: () => void
  const endedOnce = new Promise<void>((resolve) => (ended = resolve))
  const end = whenEnded(
    child,
    (code, signal) => {
      expect(endedAt, 'ended once').toBeUndefined()
      endedAt = Date.now()
      endedWith = { code, signal }
      ended()
    },
    closePipesAfterMs,
  )
  return { end, ended: endedOnce, endedAt: () => endedAt, endedWith: () => endedWith }
}

describe('a pack process ends once it has exited and its channel has closed', () => {
  it('exit alone does not end it; its channel closing then does, once, with its exit code', async () => {
    const child = spawn(process.execPath, ['-e', 'process.exit(3)'], { stdio: 'pipe' })
    const seen = timed(child)
    await new Promise((resolve) => child.once('exit', resolve))
    expect(seen.endedAt()).toBeUndefined()
    seen.end.channelClosed()
    seen.end.channelClosed()
    expect(seen.endedWith()).toEqual({ code: 3, signal: null })
  })

  it('its channel closing first ends it at its exit', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 200)'], { stdio: 'pipe' })
    const seen = timed(child)
    seen.end.channelClosed()
    expect(seen.endedAt()).toBeUndefined()
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))
    expect(seen.endedWith()).toEqual({ code: null, signal: 'SIGKILL' })
  })

  it('a grandchild holding its pipes holds its end no longer than closePipesAfterMs after its exit', async () => {
    // Held 10 s: an end that waited for the pipes comes far past the bound below.
    const child = exitsLeavingItsPipesHeld(10_000)
    let exitedAt = 0
    child.once('exit', () => (exitedAt = Date.now()))
    const seen = timed(child, 300)
    let closed = false
    child.once('close', () => (closed = true))
    await seen.ended
    expect(seen.endedWith()).toEqual({ code: 0, signal: null })
    // Timed from its exit, not its spawn (Node's boot); loose for a loaded machine.
    expect((seen.endedAt() as number) - exitedAt).toBeLessThan(5_000)
    // Its 'close' came only as its pipes were destroyed here, not as the grandchild let them go.
    expect(await within(5_000, () => closed), "its 'close'").toBe(true)
  })
})
