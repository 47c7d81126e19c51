import type { Backend, LeaseRecord } from '@worklease/spec'
import { check, checkEqual } from '../assertions.js'
import type { CaseContext } from '../case-context.js'

const encoder = new TextEncoder()

export const bytes = (text: string): Uint8Array => encoder.encode(text)

// Wide enough to forgive a remote server's clock, narrow enough to catch seconds-for-milliseconds
// and time-zone mistakes, which are off by minutes or more.
const SERVER_CLOCK_TOLERANCE_MS = 30_000

/** `record` is a well-formed lease for `workId`/`holderId` expiring `ttlMs` after "now". */
export function checkRecord(
  context: CaseContext,
  record: LeaseRecord,
  expected: { workId: string; holderId: string; fencingToken: bigint; ttlMs: number; startedAt: number },
): void {
  checkEqual(typeof record.fencingToken, 'bigint', 'record.fencingToken type')
  checkEqual(record.fencingToken, expected.fencingToken, 'record.fencingToken')
  checkEqual(record.workId, expected.workId, 'record.workId')
  checkEqual(record.holderId, expected.holderId, 'record.holderId')
  check(record.expiresAt instanceof Date, 'record.expiresAt must be a Date')
  const expiresAt = record.expiresAt.getTime()
  if (context.clientClock) {
    checkEqual(expiresAt, context.clock.now() + expected.ttlMs, 'record.expiresAt (client clock: now + ttl)')
  } else {
    const low = expected.startedAt + expected.ttlMs - SERVER_CLOCK_TOLERANCE_MS
    const high = Date.now() + expected.ttlMs + SERVER_CLOCK_TOLERANCE_MS
    check(
      expiresAt >= low && expiresAt <= high,
      `record.expiresAt ${record.expiresAt.toISOString()} is not about now + ttl (${expected.ttlMs} ms)`,
    )
  }
}

/** One way to take a lease: `acquire`, or `acquireWithCheckpoint` (its record) on `backend`. */
export type TakeLease = (
  backend: Backend,
  workId: string,
  holderId: string,
  ttlMs: number,
) => Promise<LeaseRecord>

/**
 * The ways `c`'s backend takes a lease: `acquire`, and `acquireWithCheckpoint` where it has it, which
 * must take it exactly as `acquire` does (same tokens, same failure paths).
 */
export function takeWays(c: CaseContext): Array<[string, TakeLease]> {
  const ways: Array<[string, TakeLease]> = [
    ['acquire', (b, workId, holderId, ttlMs) => b.acquire(workId, holderId, ttlMs)],
  ]
  if (c.capabilities.acquireWithCheckpoint) {
    ways.push([
      'acquireWithCheckpoint',
      async (b, workId, holderId, ttlMs) => (await b.acquireWithCheckpoint!(workId, holderId, ttlMs)).record,
    ])
  }
  return ways
}

/** Ids every operation must refuse with INVALID_ARGUMENT before any round trip. */
export const BAD_IDS: ReadonlyArray<[string, unknown]> = [
  ['undefined', undefined],
  ['null', null],
  ['a number', 42],
  ['an object', { toString: () => 'w' }],
  ['the empty string', ''],
  ['256 code units', 'x'.repeat(256)],
  ['U+0000', 'a\u0000b'],
  ['a lone high surrogate', 'a\uD800'],
  ['a lone low surrogate', '\uDC00b'],
  ['reversed surrogates', '\uDC00\uD800'],
]

/** Ttls every operation must refuse with INVALID_ARGUMENT before any round trip. */
export const BAD_TTLS: ReadonlyArray<[string, unknown]> = [
  ['0', 0],
  ['-1', -1],
  ['1.5', 1.5],
  ['NaN', Number.NaN],
  ['Infinity', Number.POSITIVE_INFINITY],
  ['2^31', 2_147_483_648],
  ['2^53', 2 ** 53],
  ['a numeric string', '1000'],
  ['a bigint', 1000n],
  ['undefined', undefined],
]
