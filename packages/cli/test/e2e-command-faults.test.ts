import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { cli, isOneLine, openTestStore, type TestStore } from './e2e/harness.js'

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
})
