import { type Backend, isWorkleaseError, type LeaseRecord } from '@worklease/spec'
import { check, checkEqual, show } from '../assertions.js'
import type { CaseContext } from '../case-context.js'
import type { SupportContext } from '../suite-case.js'

export const needsFailNextCall = (_caps: unknown, { failsCalls }: SupportContext) =>
  failsCalls ? undefined : 'the harness cannot make a call to the store fail (no failNextCall())'

/**
 * Runs `call` with the harness set to fail its second round trip: the one a refusal path may take
 * (the read that tells expired from fenced, a checkpoint's extending write). The call then rejects
 * with the store's own error; or it took one round trip only and left that failure to the next one,
 * which `probe` makes. Resolves with the call's answer, if it answered.
 */
export async function failingSecondRoundTrip<T>(
  c: CaseContext,
  what: string,
  call: () => Promise<T>,
  probe: () => Promise<unknown>,
): Promise<{ answer: T } | undefined> {
  c.failNextCall(1)
  let answer: T
  try {
    answer = await call()
  } catch (error) {
    check(
      !isWorkleaseError(error),
      `${what}, its second round trip failing: expected the store's own error, got ${show(error)}`,
    )
    return undefined
  }
  const left = await probe().then(
    () => undefined,
    (error: unknown) => error,
  )
  check(
    left !== undefined && !isWorkleaseError(left),
    `${what}: its second round trip failed, and it answered ${show(answer)} as if the store had not`,
  )
  return { answer }
}

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
