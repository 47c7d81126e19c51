import type { CallOptions } from './call-options.js'
import { InvalidArgumentError } from './errors.js'
import type { LeaseRecord } from './lease-record.js'

/** Longest workId or holderId, in UTF-16 code units. */
export const MAX_ID_LENGTH = 255
/** Largest ttl: the largest delay a Node.js timer accepts, about 24.8 days. */
export const MAX_TTL_MS = 2_147_483_647
/** Largest fencing token: every store keeps it as a signed 64-bit integer. */
export const MAX_FENCING_TOKEN = 0x7fff_ffff_ffff_ffffn

// With the `u` flag a well-formed surrogate pair is one code point, so only lone halves match.
const LONE_SURROGATE = /\p{Surrogate}/u

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'string') return `a string of length ${value.length}`
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'number') return String(value)
  return typeof value
}

/**
 * Checks a workId or holderId: a non-empty string of at most {@link MAX_ID_LENGTH} UTF-16 code units,
 * without U+0000 (many stores truncate at it) or lone surrogates (not representable in UTF-8).
 */
export function validateId(name: 'workId' | 'holderId', value: unknown): asserts value is string {
  if (typeof value !== 'string')
    throw new InvalidArgumentError(`${name} must be a string, got ${describe(value)}`)
  if (value.length === 0) throw new InvalidArgumentError(`${name} must not be empty`)
  if (value.length > MAX_ID_LENGTH) {
    throw new InvalidArgumentError(
      `${name} must be at most ${MAX_ID_LENGTH} UTF-16 code units, got ${value.length}`,
    )
  }
  if (value.includes('\u0000')) throw new InvalidArgumentError(`${name} must not contain U+0000`)
  if (LONE_SURROGATE.test(value)) throw new InvalidArgumentError(`${name} must not contain lone surrogates`)
}

/** Checks a ttl: a safe integer number of milliseconds in 1..{@link MAX_TTL_MS}. */
export function validateTtl(ttlMs: unknown): asserts ttlMs is number {
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_TTL_MS) {
    throw new InvalidArgumentError(`ttlMs must be an integer in 1..${MAX_TTL_MS}, got ${describe(ttlMs)}`)
  }
}

/** Checks checkpoint state: a `Uint8Array` (a Node.js `Buffer` is one) of at most `maxStateBytes`. */
export function validateState(state: unknown, maxStateBytes: number): asserts state is Uint8Array {
  if (!(state instanceof Uint8Array)) {
    throw new InvalidArgumentError(`state must be a Uint8Array, got ${describe(state)}`)
  }
  if (state.byteLength > maxStateBytes) {
    throw new InvalidArgumentError(
      `state is ${state.byteLength} bytes; this backend accepts at most ${maxStateBytes}`,
    )
  }
}

function isValidDate(value: unknown): value is Date {
  return Object.prototype.toString.call(value) === '[object Date]' && !Number.isNaN((value as Date).getTime())
}

/**
 * Checks a fencing token: an exact bigint in 1n..{@link MAX_FENCING_TOKEN}. Drivers' fencing helpers
 * for the protected resource use it too, so a token is judged the same everywhere.
 */
export function validateFencingToken(token: unknown, name = 'token'): asserts token is bigint {
  if (typeof token !== 'bigint' || token < 1n || token > MAX_FENCING_TOKEN) {
    throw new InvalidArgumentError(
      `${name} must be a bigint in 1n..${MAX_FENCING_TOKEN}n, got ${describe(token)}`,
    )
  }
}

/** Checks that `record` has the shape of a {@link LeaseRecord}; it does not say the lease is still held. */
export function validateRecord(record: unknown): asserts record is LeaseRecord {
  if (typeof record !== 'object' || record === null) {
    throw new InvalidArgumentError(`record must be a LeaseRecord, got ${describe(record)}`)
  }
  const { workId, holderId, fencingToken, expiresAt } = record as Record<string, unknown>
  validateId('workId', workId)
  validateId('holderId', holderId)
  validateFencingToken(fencingToken, 'record.fencingToken')
  if (!isValidDate(expiresAt)) throw new InvalidArgumentError('record.expiresAt must be a valid Date')
}

/**
 * Checks per-call options and throws the signal's reason if it already fired, so an aborted call
 * never reaches the store.
 */
export function validateCallOptions(options: unknown): asserts options is CallOptions | undefined {
  if (options === undefined) return
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError(`options must be an object, got ${describe(options)}`)
  }
  const { signal } = options as { signal?: unknown }
  if (signal === undefined) return
  if (
    typeof signal !== 'object' ||
    signal === null ||
    typeof (signal as AbortSignal).aborted !== 'boolean' ||
    typeof (signal as AbortSignal).addEventListener !== 'function'
  ) {
    throw new InvalidArgumentError('options.signal must be an AbortSignal')
  }
  ;(signal as AbortSignal).throwIfAborted()
}

/** Everything {@link Backend.acquire} must check before its round trip. */
export function validateAcquireArgs(
  workId: unknown,
  holderId: unknown,
  ttlMs: unknown,
  options: unknown,
): void {
  validateId('workId', workId)
  validateId('holderId', holderId)
  validateTtl(ttlMs)
  validateCallOptions(options)
}

/** Everything {@link Backend.checkpoint} must check before its round trip. */
export function validateCheckpointArgs(
  record: unknown,
  state: unknown,
  ttlMs: unknown,
  maxStateBytes: number,
  options: unknown,
): void {
  validateRecord(record)
  validateState(state, maxStateBytes)
  validateTtl(ttlMs)
  validateCallOptions(options)
}

/** Everything {@link Backend.renew} must check before its round trip. */
export function validateRenewArgs(record: unknown, ttlMs: unknown, options: unknown): void {
  validateRecord(record)
  validateTtl(ttlMs)
  validateCallOptions(options)
}

/** Everything {@link Backend.release} and {@link Backend.readCheckpoint} must check before their round trip. */
export function validateRecordArgs(record: unknown, options: unknown): void {
  validateRecord(record)
  validateCallOptions(options)
}

/** Builds the frozen record a backend returns from `acquire`. */
export function createLeaseRecord(
  workId: string,
  holderId: string,
  fencingToken: bigint,
  expiresAtMs: number,
): LeaseRecord {
  return Object.freeze({ workId, holderId, fencingToken, expiresAt: new Date(expiresAtMs) })
}
