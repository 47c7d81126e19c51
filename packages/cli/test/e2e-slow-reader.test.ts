import { execFileSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { CLI, cleanEnv, openTestStore, type TestStore } from './e2e/harness.js'

// Well past a pipe's 64 KiB buffer, so most of the output waits for the reader.
const LEASES = 3_000
const HOUR = 3_600_000

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
})
