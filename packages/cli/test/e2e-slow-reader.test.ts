import { execFileSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { CLI, cleanEnv, openTestStore, spawnCli, type TestStore } from './e2e/harness.js'

// Well past a pipe's 64 KiB buffer, so most of the output waits for the reader.
const LEASES = 3_000
const HOUR = 3_600_000

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Runs the built CLI in a shell pipeline whose reader starts reading only after `readAfterSeconds`
 * (as `worklease list | less` does until the operator scrolls), and counts the lines it got.
 */
function slowReader(args: readonly string[], readAfterSeconds: number) {
  const quoted = [process.execPath, CLI, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ')
  const script = `${quoted} | (sleep ${readAfterSeconds}; wc -l); echo "exit \${PIPESTATUS[0]}"`
  const out = execFileSync('bash', ['-c', script], { env: cleanEnv(), encoding: 'utf8' })
  const [lines, exit] = out.trim().split('\n')
  return { lines: Number(lines!.trim()), code: Number(exit!.replace('exit ', '')) }
}

describe('output to a pipe read late (a pager, a busy pipeline) is never cut off', () => {
  let store: TestStore
  beforeAll(async () => {
    store = await openTestStore('sqlite')
    for (let i = 0; i < LEASES; i++) {
      await store.backend.acquire(
        `work-item-with-a-long-name-${String(i).padStart(6, '0')}`,
        'worker-a',
        HOUR,
      )
    }
  }, 60_000)
  afterAll(async () => {
    await store?.close()
  })

  test('list prints every lease to a pipe read 3 s late (e.g. `worklease list | less`)', async () => {
    const { code, lines } = slowReader(['list', ...store.args], 3)
    expect({ code, lines }).toEqual({ code: 0, lines: LEASES + 1 })
  }, 30_000)

  test('list --json prints every lease to a pipe read 3 s late', async () => {
    const { code, lines } = slowReader(['list', '--json', ...store.args], 3)
    expect({ code, lines }).toEqual({ code: 0, lines: LEASES })
  }, 30_000)

  /** A watch whose first read fills a pipe nobody reads (well past 64 KiB), stopped with Ctrl-C. */
  async function watchStoppedUnread() {
    const watch = spawnCli(['watch', '--json', '--interval', '60000', ...store.args])
    watch.child.stdout.pause()
    while (watch.child.stdout.readableLength === 0) await sleep(20)
    await sleep(500)
    watch.child.kill('SIGINT')
    return watch
  }

  // Ctrl-C stops the watch, but what it wrote before still waits in the process for a reader that
  // may never read: the process stays until a second Ctrl-C (the default: it ends at once). Found
  // by a session that took the wait for a write blocking Node.js; the operator saw nothing happen.
  test('Ctrl-C on a watch whose reader does not read: it says what it waits for, and a second ends it', async () => {
    const watch = await watchStoppedUnread()
    try {
      for (let waited = 0; watch.stderr() === '' && waited < 10_000; waited += 50) await sleep(50)
      expect({ running: watch.child.exitCode === null, stderr: watch.stderr() }).toEqual({
        running: true,
        stderr: expect.stringMatching(
          /^worklease: stopped; \d+ bytes of output wait for the reader \(Ctrl-C again drops them\)\n$/,
        ),
      })
      watch.child.kill('SIGINT')
      const ended = await Promise.race([
        new Promise((resolve) => watch.child.on('exit', (_code, signal) => resolve(signal))),
        sleep(5_000).then(() => 'still running'),
      ])
      expect(ended).toBe('SIGINT')
    } finally {
      watch.child.kill('SIGKILL')
    }
  }, 30_000)

  test('Ctrl-C on a watch read late: every line written before it still reaches the reader', async () => {
    const watch = await watchStoppedUnread()
    try {
      await sleep(500)
      watch.child.stdout.resume()
      const code = await Promise.race([watch.exited, sleep(10_000).then(() => 'still running')])
      expect({ code, lines: watch.stdout().split('\n').filter(Boolean).length }).toEqual({
        code: 0,
        lines: LEASES,
      })
    } finally {
      watch.child.kill('SIGKILL')
    }
  }, 30_000)
})
