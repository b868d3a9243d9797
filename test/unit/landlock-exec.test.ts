// The helper itself (workers/native/landlock-exec.c), built by `npm run build`, run for real:
// what the process it starts can no longer do to other processes of its user, and what it
// still can do to itself. Each script runs as plain Node inside the wall, with no permission
// model and no guard, so what refuses it is the kernel alone.
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { inLandlock } from '../../src/pool/landlock.js'
import { strictReads } from '../../src/pool/strict-flags.js'
import { landlockOf } from '../helpers/host.js'

const { wall, kernelLacksIt } = landlockOf('landlock-exec tests')

/** Runs `command` inside the wall (with no network when `noNetwork`; writing only beneath env's KINDGI_CALL_FOLDER when `callFolder`); its stdout, trimmed. */
function runInside(command: string[], noNetwork = false, env: Record<string, string> = {}, callFolder = false): string {
  const [program, ...args] = inLandlock(command, { noNetwork, callFolder }, wall)
  const run = spawnSync(program as string, args, { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 10_000 })
  expect(run.status, `${command.join(' ').slice(0, 80)}: its own exit (stderr: ${run.stderr})`).toBe(0)
  return run.stdout.trim()
}

/** Runs `script` as plain Node inside the wall; its stdout's JSON. */
function inside(script: string, noNetwork: boolean, env: Record<string, string> = {}): Record<string, string> {
  return JSON.parse(runInside([process.execPath, '-e', script], noNetwork, env)) as Record<string, string>
}

describe.skipIf(kernelLacksIt)('a process started through landlock-exec, on this kernel', () => {
  let other: ReturnType<typeof spawn>
  let niceBefore = ''
  let listener: Server
  let port = 0
  beforeAll(async () => {
    // A session of its own: an autogroup is a session's, and a failing wall must not renice this test run's.
    other = spawn('sleep', ['60'], { stdio: 'ignore', detached: true })
    niceBefore = spawnSync('ps', ['-o', 'ni=', '-p', String(other.pid)], { encoding: 'utf8' }).stdout.trim()
    listener = createServer((socket) => socket.end())
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
    port = (listener.address() as { port: number }).port
  })
  afterAll(() => {
    other.kill('SIGKILL')
    listener.close()
  })

  it('is walled in: the probe says so', () => {
    expect(wall).toMatchObject({ kind: 'on' })
  })

  it('signals, renices and limits no other process of its user, and still itself (as pid 0: a pid may be reused by the time a child that outlived it names it)', () => {
    const script = `
      const os = require('node:os')
      const other = Number(process.env.OTHER)
      const tryIt = (f) => { try { f(); return 'ok' } catch (err) { return err.info?.code ?? err.code } }
      console.log(JSON.stringify({
        killOther: tryIt(() => process.kill(other, 0)),
        killSelf: tryIt(() => process.kill(process.pid, 0)),
        reniceOther: tryIt(() => os.setPriority(other, 19)),
        reniceSelf: tryIt(() => os.setPriority(0, 5)),
        reniceOwnPid: tryIt(() => os.setPriority(process.pid, 6)),
        oomScoreAdj: require('node:fs').readFileSync('/proc/self/oom_score_adj', 'utf8').trim(),
        ownSession: require('node:fs').readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[3] === String(process.pid),
      }))`
    expect(inside(script, false, { OTHER: String(other.pid) })).toEqual({
      killOther: 'EPERM',
      killSelf: 'ok',
      reniceOther: 'EPERM',
      reniceSelf: 'ok',
      reniceOwnPid: 'EPERM',
      // Killed first when memory runs out.
      oomScoreAdj: '1000',
      // A session, and so an autogroup, of its own.
      ownSession: true,
    })
    expect(spawnSync('ps', ['-o', 'ni=', '-p', String(other.pid)], { encoding: 'utf8' }).stdout.trim(), "the other process's nice").toBe(niceBefore)
  })

  it("writes no process's /proc entries, its own included (it could set its oom_score_adj back to 0), and still files in /tmp and /dev/null", () => {
    const script = [
      `for f in autogroup oom_score_adj; do echo 19 > /proc/${other.pid}/$f 2>/dev/null; echo "other-$f $?"; done`,
      'echo 0 > /proc/self/oom_score_adj 2>/dev/null; echo "self $? $(cat /proc/self/oom_score_adj)"',
      'echo 19 > /proc/self/autogroup 2>/dev/null; echo "self-autogroup $?"',
      'f=$(mktemp); echo x > "$f"; echo "tmp $?"; rm -f "$f"',
      'echo x > /dev/null; echo "null $?"',
    ].join('; ')
    const lines = runInside(['/bin/sh', '-c', script]).split('\n')
    expect(lines).toEqual(['other-autogroup 2', 'other-oom_score_adj 2', 'self 2 1000', 'self-autogroup 2', 'tmp 0', 'null 0'])
  })

  it("pins and limits no other process through a child (util-linux's taskset, prlimit); limits itself (pid 0)", () => {
    const sh = (line: string) => runInside(['/bin/sh', '-c', `${line} >/dev/null 2>&1; echo $?`])
    expect(sh(`taskset -p 1 ${other.pid}`), 'taskset of another process').toBe('1')
    expect(sh(`prlimit --nofile=64:64 --pid ${other.pid}`), 'prlimit of another process').toBe('1')
    expect(sh('prlimit --nofile=64:64 --pid 0'), 'prlimit of itself').toBe('0')
    expect(
      spawnSync('prlimit', ['--nofile', '--pid', String(other.pid), '--raw', '--noheadings'], { encoding: 'utf8' }).stdout,
      "the other's limit",
    ).not.toMatch(/ 64 +64/)
  })

  const python = spawnSync('python3', ['--version']).error === undefined
  it.skipIf(!python)(
    'has no io_uring (which makes sockets past the filter), and with --no-network no socket at all, a unix one included (python3, for the raw system calls)',
    () => {
      const script = [
        'import socket, ctypes, os, json',
        'r = {}',
        "for name, fam, typ in (('udp', socket.AF_INET, socket.SOCK_DGRAM), ('netlink', socket.AF_NETLINK, socket.SOCK_RAW), ('vsock', 40, socket.SOCK_STREAM), ('unix', socket.AF_UNIX, socket.SOCK_STREAM)):",
        '  try:',
        "    socket.socket(fam, typ).close(); r[name] = 'ok'",
        '  except OSError as e:',
        '    r[name] = e.strerror',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'params = (ctypes.c_char * 120)()',
        'fd = libc.syscall(425, 8, params)  # io_uring_setup, the same number on x86_64 and aarch64',
        "r['io_uring'] = 'ok' if fd >= 0 else os.strerror(ctypes.get_errno())",
        'print(json.dumps(r))',
      ].join('\n')
      const run = (noNetwork: boolean) => JSON.parse(runInside(['/usr/bin/env', 'python3', '-c', script], noNetwork))
      const denied = 'Permission denied'
      expect(run(true)).toEqual({ udp: denied, netlink: denied, vsock: denied, unix: denied, io_uring: 'Function not implemented' })
      expect(run(false)).toMatchObject({ udp: 'ok', unix: 'ok', io_uring: 'Function not implemented' })
    },
  )

  it('with --no-network has no IPv4 or IPv6 socket (TCP, UDP), where without it the same script connects', () => {
    const script = `
      const net = require('node:net'), dgram = require('node:dgram')
      const out = {}
      const done = () => { if (Object.keys(out).length === 3) console.log(JSON.stringify(out)) }
      net.connect(Number(process.env.PORT), '127.0.0.1').on('connect', function () { out.tcp = 'connected'; this.destroy(); done() }).on('error', (err) => { out.tcp = err.code; done() })
      const udp4 = dgram.createSocket('udp4').on('error', (err) => { out.udp4 = err.code; done() })
      udp4.bind(0, () => { out.udp4 = 'bound'; udp4.close(); done() })
      const udp6 = dgram.createSocket('udp6').on('error', (err) => { out.udp6 = err.code; done() })
      udp6.bind(0, '::1', () => { out.udp6 = 'bound'; udp6.close(); done() })`
    expect(inside(script, true, { PORT: String(port) })).toEqual({ tcp: 'EACCES', udp4: 'EACCES', udp6: 'EACCES' })
    expect(inside(script, false, { PORT: String(port) })).toMatchObject({ tcp: 'connected', udp4: 'bound' })
  })

  it('with --call-folder writes, makes, removes and renames only beneath the folder KINDGI_CALL_FOLDER names (and writes to /dev/null), and does not pass the variable on', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kph-call-folder-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const folder = join(dir, 'call')
    mkdirSync(folder)
    writeFileSync(join(dir, 'beside'), 'kept')
    const script = [
      'cd "$1"',
      'echo x > call/a; echo "own-write $?"',
      'mkdir call/d; echo "own-mkdir $?"',
      'mv call/a call/d/b; echo "own-rename $?"',
      'echo x 2>/dev/null > beside; echo "beside-write $?"',
      'truncate -s 0 beside 2>/dev/null; echo "beside-truncate $?"',
      'echo x 2>/dev/null > new; echo "beside-create $?"',
      'mkdir newdir 2>/dev/null; echo "beside-mkdir $?"',
      'rm -f beside 2>/dev/null; echo "beside-remove $?"',
      'mv call/d/b moved 2>/dev/null; echo "out-rename $?"',
      'echo x > /dev/null; echo "null $?"',
      'echo "variable ${KINDGI_CALL_FOLDER:-unset}"',
    ].join('; ')
    const lines = runInside(['/bin/sh', '-c', script, 'sh', dir], false, { KINDGI_CALL_FOLDER: folder }, true).split('\n')
    expect(lines).toEqual([
      'own-write 0',
      'own-mkdir 0',
      'own-rename 0',
      'beside-write 2',
      'beside-truncate 1',
      'beside-create 2',
      'beside-mkdir 1',
      'beside-remove 1',
      'out-rename 1',
      'null 0',
      'variable unset',
    ])
    expect(readFileSync(join(dir, 'beside'), 'utf8'), 'the file beside it').toBe('kept')
  })

  it('with --keep-modes changes no mode or ACL by path (chmod, setxattr: the strict root stays unlistable), where without it the same script does; copies still keep their mode (fchmod)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kph-keep-modes-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    mkdirSync(join(dir, 'root'), { mode: 0o300 })
    writeFileSync(join(dir, 'source'), 'x', { mode: 0o640 })
    const script = `
      const fs = require('node:fs')
      const dir = ${JSON.stringify(dir)}
      const tried = (act) => { try { act(); return 'done' } catch (err) { return err.code } }
      const chmod = tried(() => fs.chmodSync(dir + '/root', 0o700))
      const mode = (fs.statSync(dir + '/root').mode & 0o777).toString(8)
      tried(() => fs.chmodSync(dir + '/root', 0o300))
      fs.copyFileSync(dir + '/source', dir + '/copy')
      console.log(JSON.stringify({ chmod, mode, copied: (fs.statSync(dir + '/copy').mode & 0o777).toString(8) }))
    `
    const run = (keepModes: boolean) => {
      const [program, ...args] = inLandlock([process.execPath, '-e', script], { noNetwork: false, keepModes }, wall)
      const ran = spawnSync(program as string, args, { encoding: 'utf8', timeout: 10_000 })
      expect(ran.status, `its own exit (stderr: ${ran.stderr})`).toBe(0)
      rmSync(join(dir, 'copy'), { force: true })
      return JSON.parse(ran.stdout) as Record<string, string>
    }
    expect(run(false)).toEqual({ chmod: 'done', mode: '700', copied: '640' })
    expect(run(true)).toEqual({ chmod: 'EPERM', mode: '300', copied: '640' })
    // An extended attribute (an ACL is one) by path, where the file system takes one outside the wall.
    const outside = spawnSync('/usr/bin/python3', ['-c', `import os; os.setxattr(${JSON.stringify(join(dir, 'root'))}, 'user.k', b'v')`], { encoding: 'utf8' })
    if (outside.status === 0) {
      const [program, ...args] = inLandlock(
        ['/usr/bin/python3', '-c', `import os; os.setxattr(${JSON.stringify(join(dir, 'source'))}, 'user.k', b'v')`],
        { noNetwork: false, keepModes: true },
        wall,
      )
      const ran = spawnSync(program as string, args, { encoding: 'utf8' })
      expect(ran.stderr, 'setxattr inside the wall').toContain('Operation not permitted')
    }
  })

  it('with --read, reads only beneath the folders named and its call folder: a link among them that leads elsewhere reads nothing', () => {
    // Node's permission model checks a link's own path and follows it: a strict tool read the
    // token file through a link its pack shipped (stop 38). Here no permission model runs.
    const dir = mkdtempSync(join(tmpdir(), 'kph-reads-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const folder = join(dir, 'call')
    const allowed = join(dir, 'allowed')
    mkdirSync(folder)
    mkdirSync(allowed)
    writeFileSync(join(dir, 'secret'), 'secret')
    writeFileSync(join(allowed, 'own.txt'), 'own')
    writeFileSync(join(folder, 'mine'), 'mine')
    symlinkSync(join(dir, 'secret'), join(allowed, 'link.txt'))
    const script = [
      'cat "$1/allowed/own.txt"; echo " $?"',
      'cat "$1/allowed/link.txt" 2>/dev/null; echo "link $?"',
      'cat "$1/secret" 2>/dev/null; echo "secret $?"',
      'cat "$1/call/mine"; echo " $?"',
      'ls "$1" >/dev/null 2>&1; echo "list $?"',
    ].join('; ')
    const [program, ...args] = inLandlock(['/bin/sh', '-c', script, 'sh', dir], { noNetwork: false, callFolder: true, reads: strictReads([allowed]) }, wall)
    const run = spawnSync(program as string, args, { encoding: 'utf8', env: { ...process.env, KINDGI_CALL_FOLDER: folder }, timeout: 10_000 })
    expect(run.status, `its own exit (stderr: ${run.stderr})`).toBe(0)
    expect(run.stdout.trim().split('\n')).toEqual(['own 0', 'link 1', 'secret 1', 'mine 0', 'list 2'])
  })

  it('with --call-folder and no folder to name, refuses to start the program', () => {
    const [program, ...args] = inLandlock(['/bin/true'], { noNetwork: false, callFolder: true }, wall)
    const run = spawnSync(program as string, args, { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } })
    expect(run.status).toBe(126)
    expect(run.stderr).toContain('KINDGI_CALL_FOLDER')
  })
})
