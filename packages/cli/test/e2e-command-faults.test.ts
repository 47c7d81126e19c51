import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { isWorkleaseError, type LeaseRecord } from '@worklease/spec'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest'
import {
  CLI,
  cleanEnv,
  cli,
  isOneLine,
  openTestStore,
  shellQuote,
  spawnCli,
  type TestStore,
  TmuxServer,
  tmuxPicked,
} from './e2e/harness.js'

const TTL = 600_000
/** Node's timers hold at most 2^31-1 ms; a longer delay is silently cut to 1 ms. */
const LONGEST_TIMER_MS = 2 ** 31 - 1

/**
 * Faults a review reproduced in the commands themselves, each checked on the built binary against a
 * SQLite file of the test's own (no server needed).
 */
describe('worklease commands on sqlite: faults found in review', () => {
  let store: TestStore
  beforeAll(async () => {
    store = await openTestStore('sqlite')
    for (const id of ['job-b', 'job-c', 'job-d']) await store.backend.acquire(id, 'worker', TTL)
    // More than a pipe's 64 KiB of --json lines, so the writer is still writing when the reader goes.
    for (let i = 0; i < 1000; i++) await store.backend.acquire(`pipe-${String(i).padStart(4, '0')}`, 'w', TTL)
  })
  afterAll(async () => {
    await store?.close()
  })

  test.each([
    [
      ['watch', '--interval', String(LONGEST_TIMER_MS + 1)],
      /--interval takes a whole number in 1\.\.2147483647/,
    ],
    [['watch', '--interval', '3000000000'], /--interval takes a whole number in 1\.\.2147483647/],
  ])('%j is refused as bad input (exit 2, one line), not turned into a 1 ms loop', async (args, message) => {
    const { code, stdout, stderr } = await cli([...args, '--count', '3', ...store.args])
    expect({ code, stdout, stderr }).toMatchObject({ code: 2, stdout: '' })
    expect(stderr).toMatch(message)
    expect(isOneLine(stderr)).toBe(true)
  })

  test('watch --interval 2^31-1 is the longest accepted (one read, then --count stops it)', async () => {
    const { code, stderr } = await cli([
      'watch',
      '--interval',
      String(LONGEST_TIMER_MS),
      '--count',
      '1',
      ...store.args,
    ])
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
  })

  test.each([
    [['list', 'pipe-']],
    [['list', 'pipe-', '--json']],
    [['watch', 'pipe-', '--interval', '100']],
    [['watch', 'pipe-', '--json', '--interval', '100']],
  ])('%j | head -1 ends quietly with exit 0 once head has gone', async (args) => {
    const pipeline = `${shellQuote([process.execPath, CLI, ...args, ...store.args])} | head -1 >/dev/null; echo "exit=\${PIPESTATUS[0]}" >&2`
    const { stderr } = await promisify(execFile)('bash', ['-c', pipeline], {
      env: cleanEnv(),
      timeout: 20_000,
    })
    expect(stderr).toBe('exit=0\n')
  })

  // Found by a review: a failed write is reported after write() returns, and was checked only before
  // the next page, so a command whose output was lost to a full disk exited 0.
  test.each([
    [['list']],
    [['list', '--json']],
    [['show', 'job-b']],
    [['show', 'job-b', '--json']],
    [['watch', 'job-', '--count', '1', '--json']],
    [['watch', 'job-', '--count', '1']],
  ])('%j >/dev/full: exit 1, one line on stderr saying the output was not written', async (args) => {
    const script = `${shellQuote([process.execPath, CLI, ...args, ...store.args])} >/dev/full; echo "exit=$?" >&2`
    const { stderr } = await promisify(execFile)('bash', ['-c', script], { env: cleanEnv(), timeout: 20_000 })
    expect(stderr).toBe(
      'worklease: cannot write the output: ENOSPC: no space left on device, write\nexit=1\n',
    )
  })

  test('nothing to write is no failure, even to /dev/full (the "no leases" note goes to stderr)', async () => {
    const script = `${shellQuote([process.execPath, CLI, 'list', 'none-', ...store.args])} >/dev/full; echo "exit=$?" >&2`
    const { stderr } = await promisify(execFile)('bash', ['-c', script], { env: cleanEnv(), timeout: 20_000 })
    expect(stderr).toBe('no leases under "none-"\nexit=0\n')
  })

  test('watch notices a reader that went away while it waited, at its next change line', async () => {
    const watch = spawnCli(['watch', 'pipe-', '--interval', '100', ...store.args])
    await new Promise((resolve) => watch.child.stdout.once('data', resolve))
    watch.child.stdout.destroy()
    await store.backend.acquire('pipe-late', 'w', TTL)
    const code = await Promise.race([
      watch.exited,
      new Promise((resolve) => setTimeout(resolve, 10_000, 'still running')),
    ])
    if (code === 'still running') watch.child.kill()
    expect({ code, stderr: watch.stderr() }).toEqual({ code: 0, stderr: '' })
  })

  test('watch reads every lease by default: a fleet above 1000 shows no live lease as removed', async () => {
    const { stdout, stderr, code } = await watchWhile(
      ['watch', 'pipe-', '--json', '--interval', '300', '--count', '6', ...store.args],
      // Sorts before every pipe-NNNN: a read of the first 1000 would push pipe-0999 out of view.
      () => store.backend.acquire('pipe-!', 'w', TTL),
    )
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    const changes = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { change: string; workId: string })
    expect(changes.filter((row) => row.change === 'removed')).toEqual([])
    expect(changes.filter((row) => row.change === 'added').length).toBeGreaterThan(1000)
    expect(changes).toContainEqual(expect.objectContaining({ change: 'added', workId: 'pipe-!' }))
  })

  test('no id or holder reaches the output with a C1 control, DEL or a bidi override in it raw', async () => {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for them is the point
    const unsafe = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/
    const id = 'c1-\u009b31mRED\u009b0m-\u007f-\u202eevil'
    const holder = 'h\u009b2J\u2066x'
    await store.backend.acquire(id, holder, TTL)
    const runs: Array<[readonly string[], number]> = [
      [['list', 'c1-'], 0],
      [['list', 'c1-', '--json'], 0],
      [['show', id], 0],
      [['show', id, '--json'], 0],
      [['watch', 'c1-', '--count', '1'], 0],
      [['watch', 'c1-', '--count', '1', '--json'], 0],
      [['list', 'c1-\u009bnone'], 0],
      [['show', 'c1-\u009bnone\u202e'], 3],
      [['revoke', 'c1-\u009bnone\u202e', '--yes'], 3],
    ]
    // The failure message must not hold them raw either.
    const named = (args: readonly string[]) =>
      JSON.stringify(args).replace(
        /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g,
        (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
      )
    const leaks: string[] = []
    for (const [args, exitCode] of runs) {
      const { code, stdout, stderr } = await cli([...args, ...store.args])
      expect({ args, code, stderr }).toMatchObject({ code: exitCode })
      if (unsafe.test(stdout)) leaks.push(`${named(args)} on stdout`)
      if (unsafe.test(stderr)) leaks.push(`${named(args)} on stderr`)
      // JSON escapes them as \u009b: the same string once parsed.
      if (args.includes('--json'))
        expect(JSON.parse(stdout.split('\n')[0] ?? '')).toMatchObject({ workId: id, holderId: holder })
    }
    expect(leaks).toEqual([])
  })

  /** Runs a watch, calls `during` once its first round is out, and collects everything it wrote. */
  async function watchWhile(args: readonly string[], during: () => Promise<unknown>) {
    const watch = spawnCli(args)
    await new Promise((resolve) => watch.child.stdout.once('data', resolve))
    await during()
    return { code: await watch.exited, stdout: watch.stdout(), stderr: watch.stderr() }
  }

  describe('watch --limit N watches the first N leases, and says so', () => {
    let windowed: TestStore
    beforeAll(async () => {
      windowed = await openTestStore('sqlite')
      for (const id of ['job-b', 'job-c', 'job-d', 'job-e']) await windowed.backend.acquire(id, 'worker', TTL)
    })
    afterAll(async () => {
      await windowed?.close()
    })

    test('a lease pushed past the window is not reported removed; one deleted inside it is', async () => {
      const file = windowed.url.replace(/^sqlite:/, '')
      const { code, stdout, stderr } = await watchWhile(
        ['watch', 'job-', '--limit', '3', '--interval', '200', '--count', '8', ...windowed.args],
        async () => {
          await windowed.backend.acquire('job-a', 'worker', TTL) // sorts first; job-d still exists
          await new Promise((resolve) => setTimeout(resolve, 500))
          const db = new Database(file)
          db.prepare(`DELETE FROM ${windowed.table} WHERE work_id = 'job-b'`).run()
          db.close()
        },
      )
      expect(code).toBe(0)
      expect(stdout).toMatch(/ added "job-a" /)
      expect(stdout).toMatch(/ removed "job-b" /)
      expect(stdout).not.toMatch(/removed "job-[cde]"/)
      expect(stderr).toMatch(/^worklease: watching only the first 3 leases under "job-" \(--limit 3\)/)
      expect(isOneLine(stderr)).toBe(true)
    })
  })
})

const ON_TMUX = tmuxPicked('the revoke prompt tests')

/** revoke's question on a real terminal: a tmux pane is the operator, capture-pane their screen. */
describe.skipIf(!ON_TMUX)('worklease revoke and watch on a terminal (tmux)', () => {
  let store: TestStore
  let tmux: TmuxServer
  beforeAll(async () => {
    store = await openTestStore('sqlite')
    tmux = new TmuxServer()
  })
  afterAll(async () => {
    await tmux?.close()
    await store?.close()
  })

  /** Starts `worklease revoke <args>` in a pane of its own; the pane prints EXIT=<code> at the end. */
  async function revokeInPane(session: string, args: readonly string[]) {
    await tmux.start(
      session,
      { x: 200, y: 12 },
      [process.execPath, CLI, 'revoke', ...args, ...store.args],
      'echo EXIT=$?',
    )
    const until = (pattern: RegExp) => tmux.until(session, (text) => pattern.test(text))
    const keys = (...keys: string[]) => tmux.keys(session, ...keys)
    return { until, keys }
  }

  const jsonLineOf = (screen: string) =>
    JSON.parse(screen.split('\n').find((line) => line.startsWith('{')) ?? 'null')

  const stillHeld = (record: LeaseRecord) =>
    store.backend.renew(record, TTL).then(
      () => 'renewed',
      (error: unknown) => (isWorkleaseError(error, 'FENCED') ? 'FENCED' : String(error)),
    )

  test('"y" revokes the lease it named, and --json names it as previous', async () => {
    const held = await store.backend.acquire('answered', 'worker-a', TTL)
    const pane = await revokeInPane('answered', ['answered', '--json'])
    expect(await pane.until(/\[y\/N\]/)).toMatch(/held by "worker-a" \(token 1\)/)
    await pane.keys('y', 'Enter')
    const screen = await pane.until(/EXIT=\d+/)
    expect(screen).toMatch(/EXIT=0/)
    expect(jsonLineOf(screen)).toEqual({
      workId: 'answered',
      revoked: true,
      previous: { holderId: 'worker-a', fencingToken: '1' },
    })
    expect(await stillHeld(held)).toBe('FENCED')
  })

  test('a lease that changed hands while the question was asked is not revoked (exit 5)', async () => {
    const first = await store.backend.acquire('swap', 'worker-a', TTL)
    const pane = await revokeInPane('swap', ['swap', '--json'])
    expect(await pane.until(/\[y\/N\]/)).toMatch(/held by "worker-a" \(token 1\)/)
    // While the operator reads the question, worker-a finishes cleanly and worker-b takes over.
    await store.backend.release(first)
    const second = await store.backend.acquire('swap', 'worker-b', TTL)
    await pane.keys('y', 'Enter')
    const screen = await pane.until(/EXIT=\d+/)
    expect(screen).toMatch(/EXIT=5/)
    expect(screen).toMatch(
      /not revoked: .*now held by "worker-b" \(token 2\), not held by "worker-a" \(token 1\)/,
    )
    // Found by a review: --json printed nothing on a declined revoke.
    expect(jsonLineOf(screen)).toEqual({
      workId: 'swap',
      revoked: false,
      previous: { holderId: 'worker-b', fencingToken: '2' },
    })
    expect(await stillHeld(second)).toBe('renewed')
  })

  test('"n" with --json prints its object too, revoked false (exit 5)', async () => {
    const held = await store.backend.acquire('refused-json', 'worker-a', TTL)
    const pane = await revokeInPane('refused_json', ['refused-json', '--json'])
    await pane.until(/\[y\/N\]/)
    await pane.keys('n', 'Enter')
    const screen = await pane.until(/EXIT=\d+/)
    expect(screen).toMatch(/EXIT=5/)
    expect(jsonLineOf(screen)).toEqual({
      workId: 'refused-json',
      revoked: false,
      previous: { holderId: 'worker-a', fencingToken: '1' },
    })
    expect(await stillHeld(held)).toBe('renewed')
  })

  test.each([
    ['Ctrl-D', 'C-d'],
    ['Ctrl-C', 'C-c'],
  ])('%s at the question is "not revoked" (exit 5), not "the store failed"', async (_name, key) => {
    const workId = `declined-${key}`
    const held = await store.backend.acquire(workId, 'worker-a', TTL)
    const pane = await revokeInPane(workId.replace(/\W/g, '_'), [workId])
    await pane.until(/\[y\/N\]/)
    await pane.keys(key)
    const screen = await pane.until(/EXIT=\d+/)
    expect(screen).not.toMatch(/the store failed/)
    expect(screen).toMatch(/^worklease: not revoked$/m)
    expect(screen).toMatch(/EXIT=5/)
    expect(await stillHeld(held)).toBe('renewed')
  })

  // Found by a review: with stderr not a terminal, readline reads the answer line by line, so the
  // terminal turned Ctrl-C into SIGINT, which ended the process (exit 130) instead of answering no.
  test('Ctrl-C at the question with stderr to a file (2>file) is "not revoked" (exit 5) too', async () => {
    const workId = 'declined-stderr-to-file'
    const held = await store.backend.acquire(workId, 'worker-a', TTL)
    const dir = mkdtempSync(join(tmpdir(), 'worklease-stderr-'))
    const errors = join(dir, 'stderr')
    try {
      const command = shellQuote([process.execPath, CLI, 'revoke', workId, ...store.args])
      await tmux.startScript(
        'stderr_to_file',
        { x: 200, y: 12 },
        `${command} 2>${shellQuote([errors])}; echo EXIT=$?`,
      )
      // The question goes to the file: the command waits for an answer once it is there.
      await vi.waitFor(
        () => expect(existsSync(errors) && readFileSync(errors, 'utf8')).toMatch(/\[y\/N\] $/),
        {
          timeout: 10_000,
          interval: 100,
        },
      )
      await tmux.keys('stderr_to_file', 'C-c')
      const screen = await tmux.until('stderr_to_file', (text) => /EXIT=\d+/.test(text))
      expect({ exit: screen.match(/EXIT=\d+/)?.[0], stderr: readFileSync(errors, 'utf8') }).toEqual({
        exit: 'EXIT=5',
        stderr: expect.stringMatching(/\[y\/N\] \r?\nworklease: not revoked\n$/),
      })
      expect(await stillHeld(held)).toBe('renewed')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('watch --limit on a terminal says in its header that it shows the first N', async () => {
    for (const id of ['tty-1', 'tty-2', 'tty-3']) await store.backend.acquire(id, 'worker', TTL)
    await tmux.start('tty', { x: 200, y: 12 }, [
      process.execPath,
      CLI,
      'watch',
      'tty-',
      '--limit',
      '2',
      '--interval',
      '200',
      ...store.args,
    ])
    const screen = await tmux.until('tty', (text) => text.includes('tty-2'))
    expect(screen.split('\n')[0]).toMatch(/ {2}first 2 leases, 2 held$/)
    expect(screen).not.toMatch(/tty-3/)
  })
})
