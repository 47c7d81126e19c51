import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  ANSI,
  CLI,
  cli,
  isOneLine,
  openTestStore,
  shellQuote,
  type TestStore,
  TmuxServer,
  tmuxPicked,
} from './e2e/harness.js'

describe('worklease, whatever the store', () => {
  test.each([[[]], [['list']], [['show']], [['watch']], [['revoke']]])(
    '%j --help exits 0 with usage on stdout',
    async (command) => {
      const { code, stdout, stderr } = await cli([...command, '--help'])
      expect(stderr).toBe('')
      expect(code).toBe(0)
      expect(stdout).toMatch(new RegExp(`^Usage: worklease ${command.join(' ')}`.trimEnd()))
      if (command.length > 0) expect(stdout).toMatch(/--store <url>/)
    },
  )

  test.each([
    [['list', '--store', 'redis://localhost'], 2, /^worklease: unknown store "redis" \(examples: /],
    [['list', '--store', 'not a url'], 2, /^worklease: "not a url" is not a store URL/],
    [['show', 'x', '--store', 'mongodb://h/db?binarySize=maybe'], 2, /binarySize= takes 0 or 1/],
    [['list'], 2, /^worklease: no store: pass --store <url> or set WORKLEASE_STORE\n$/],
    [['list', '--store', 'sqlite:/nonexistent/dir/leases.db'], 1, /^worklease: no SQLite database at /],
    // An id no lease can have is a usage error before the store is opened (which here does not exist).
    [['show', '', '--store', 'sqlite:/nonexistent/dir/leases.db'], 2, /workId must not be empty/],
    [
      ['revoke', 'x'.repeat(256), '--yes', '--store', 'sqlite:/nonexistent/dir/leases.db'],
      2,
      /workId must be at most 255/,
    ],
    [
      ['list', 'x'.repeat(256), '--store', 'sqlite:/nonexistent/dir/leases.db'],
      2,
      /prefix must be at most 255/,
    ],
    [
      ['watch', 'x'.repeat(256), '--store', 'sqlite:/nonexistent/dir/leases.db'],
      2,
      /prefix must be at most 255/,
    ],
  ])('%j exits %i with one line on stderr, no stack trace', async (args, exitCode, message) => {
    const { code, stdout, stderr } = await cli(args)
    expect(stdout).toBe('')
    expect(stderr).toMatch(message)
    expect(isOneLine(stderr)).toBe(true)
    expect(code).toBe(exitCode)
  })

  test('an unknown command or option is a usage error (exit 2)', async () => {
    expect((await cli(['lsit'])).code).toBe(2)
    expect((await cli(['list', '--store', 'sqlite:x.db', '--bogus'])).code).toBe(2)
    expect((await cli(['list', '--store', 'sqlite:x.db', '--limit', '0'])).code).toBe(2)
  })
})

const ON_TMUX = tmuxPicked('the TTY view of watch')

/**
 * `watch` on a real terminal: tmux gives it a pty of a known size, and capture-pane reads the screen
 * as a person would see it (escapes rendered, not printed).
 */
describe.skipIf(!ON_TMUX)('worklease watch on a terminal (tmux)', () => {
  let store: TestStore
  let tmux: TmuxServer
  const waitForScreen = (predicate: (text: string) => boolean) => tmux.until('watch', predicate)

  beforeAll(async () => {
    store = await openTestStore('sqlite')
    tmux = new TmuxServer()
    await store.backend.acquire('job-1', 'worker-a', 120_000)
    await store.backend.release(await store.backend.acquire('job-2', 'worker-b', 120_000))
    await tmux.start('watch', { x: 120, y: 20 }, [
      process.execPath,
      CLI,
      'watch',
      'job-',
      ...store.args,
      '--interval',
      '200',
    ])
  })
  afterAll(async () => {
    await tmux?.close()
    await store?.close()
  })

  test('draws a live table and redraws it when a lease changes', async () => {
    const first = await waitForScreen((text) => text.includes('job-2'))
    const lines = first.split('\n')
    expect(lines[0]).toMatch(/^worklease watch {2}sqlite:\S+ {2}\S+Z {2}2 leases, 1 held$/)
    expect(lines[1]).toMatch(/^WORK ID\s+STATUS\s+HOLDER/)
    expect(lines[2]).toMatch(/^job-1\s+held\s+worker-a\s+1\b/)
    expect(lines[3]).toMatch(/^job-2\s+released\s+worker-b\s+1\b/)
    // A table, not change lines: the piped view's words never appear.
    expect(first).not.toMatch(/\badded\b/)

    await store.backend.acquire('job-3', 'worker-c', 120_000)
    const second = await waitForScreen((text) => text.includes('job-3'))
    expect(second.split('\n')[0]).toMatch(/3 leases, 2 held$/)
    // Redrawn in place: the header appears once, not once per read.
    expect(second.match(/worklease watch/g)).toHaveLength(1)
    // On a terminal, and without NO_COLOR, it is in colour (the piped tests check the opposite).
    expect(await tmux.screen('watch', { escapes: true })).toMatch(ANSI)
  })

  // The terminal echoes Ctrl-C as ^C where the cursor is, and ends no line: watch printed nothing
  // after it, so the shell's next words went on the same line as the ^C.
  test('Ctrl-C ends the watch on a line of its own: what follows starts below the ^C', async () => {
    await tmux.startScript(
      'interrupted',
      { x: 120, y: 20 },
      `${shellQuote([process.execPath, CLI, 'watch', 'job-', ...store.args, '--interval', '200'])}; echo EXIT=$?`,
    )
    await tmux.until('interrupted', (text) => text.includes('job-1'))
    await tmux.keys('interrupted', 'C-c')
    const screen = await tmux.until('interrupted', (text) => /EXIT=\d+/.test(text))
    expect(
      screen
        .split('\n')
        .filter((line) => line !== '')
        .slice(-2),
    ).toEqual(['^C', 'EXIT=0'])
  })
})
