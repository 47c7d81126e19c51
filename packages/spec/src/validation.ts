import { nextCheckpointSequence } from './checkpoint-sequence.js'
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
// String.prototype.isWellFormed (Node.js 20+) answers the same question a few times faster.
const isWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed
const hasLoneSurrogate = isWellFormed
  ? (value: string) => !isWellFormed.call(value)
  : (value: string) => LONE_SURROGATE.test(value)

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
export function validateId(name: string, value: unknown): asserts value is string {
  if (typeof value !== 'string')
    throw new InvalidArgumentError(`${name} must be a string, got ${describe(value)}`)
  if (value.length === 0) throw new InvalidArgumentError(`${name} must not be empty`)
  if (value.length > MAX_ID_LENGTH) {
    throw new InvalidArgumentError(
      `${name} must be at most ${MAX_ID_LENGTH} UTF-16 code units, got ${value.length}`,
    )
  }
  if (value.includes('\u0000')) throw new InvalidArgumentError(`${name} must not contain U+0000`)
  if (hasLoneSurrogate(value)) throw new InvalidArgumentError(`${name} must not contain lone surrogates`)
}

/** Checks a ttl: a safe integer number of milliseconds in 1..{@link MAX_TTL_MS}. */
export function validateTtl(ttlMs: unknown): asserts ttlMs is number {
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_TTL_MS) {
    throw new InvalidArgumentError(`ttlMs must be an integer in 1..${MAX_TTL_MS}, got ${describe(ttlMs)}`)
  }
}

// The intrinsic getters read a typed array's internal slots: a Proxy or an object that only claims
// Uint8Array's prototype makes them throw, and no own property or subclass can change what they say.
const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object
const intrinsic = (name: PropertyKey) =>
  Object.getOwnPropertyDescriptor(typedArrayPrototype, name)?.get as (this: unknown) => unknown
const typedArrayKind = intrinsic(Symbol.toStringTag)
const typedArrayByteLength = intrinsic('byteLength')

/**
 * Checks checkpoint state, a `Uint8Array` (a Node.js `Buffer` is one) of at most `maxStateBytes`, and
 * returns a copy of its bytes: what the caller does with its buffer afterwards, or what a lying object
 * would answer on a second read, cannot change what is stored. A small copy is a view of a shared
 * slab (use its `byteOffset`), for bytes that only go out over the wire; a backend that keeps them
 * after the call passes `{ kept: true }` and gets a buffer of their own, or a view would keep its
 * whole slab alive.
 *
 * ```ts
 * const sent = validateState(state, this.capabilities.maxStateBytes)
 * const stored = validateState(state, this.capabilities.maxStateBytes, { kept: true })
 * ```
 */
export function validateState(
  state: unknown,
  maxStateBytes: number,
  { kept = false }: StateCopyOptions = {},
): Uint8Array {
  if (typedArrayKind.call(state) !== 'Uint8Array') {
    throw new InvalidArgumentError(`state must be a Uint8Array, got ${describe(state)}`)
  }
  const byteLength = typedArrayByteLength.call(state) as number
  if (byteLength > maxStateBytes) {
    throw new InvalidArgumentError(
      `state is ${byteLength} bytes; this backend accepts at most ${maxStateBytes}`,
    )
  }
  const copy = kept ? new Uint8Array(byteLength) : privateBytes(byteLength)
  try {
    copy.set(state as Uint8Array)
  } catch (error) {
    // A view whose buffer was detached (transferred) or shrunk past it: its byteLength reads 0.
    throw new InvalidArgumentError('state could not be read: its buffer is detached or too short for it', {
      cause: error,
    })
  }
  return copy
}

// States up to SMALL_STATE_BYTES are copied into views of a shared slab, as Node.js pools small
// Buffers: a new ArrayBuffer each is an allocation outside the heap and external-memory accounting,
// which cost several times the copy itself. A stored view keeps its whole slab alive, so a backend
// that keeps the bytes (the memory backend) keeps its own exact copy.
const SMALL_STATE_BYTES = 4 * 1024
const SLAB_BYTES = 64 * 1024
let slab = new ArrayBuffer(0)
let slabUsed = 0
function privateBytes(byteLength: number): Uint8Array {
  if (byteLength > SMALL_STATE_BYTES) return new Uint8Array(byteLength)
  if (slabUsed + byteLength > slab.byteLength) {
    slab = new ArrayBuffer(SLAB_BYTES)
    slabUsed = 0
  }
  const view = new Uint8Array(slab, slabUsed, byteLength)
  // Each view starts 8-byte aligned, as an allocation would.
  slabUsed += (byteLength + 7) & ~7
  return view
}

const dateTime = (value: unknown): number => {
  try {
    return Date.prototype.getTime.call(value)
  } catch {
    return Number.NaN // not a real Date (a Proxy, a lookalike object)
  }
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

/**
 * Reads the properties of an object the caller handed us exactly once, so a getter or a Proxy cannot
 * show validation one value and the store another. A throwing getter is bad input, not a store error:
 * `InvalidArgumentError` (`<name> could not be read`). Drivers read their constructor options with it.
 *
 * ```ts
 * const { client, table } = readOnce(options, ['client', 'table'], 'options')
 * ```
 */
export function readOnce<K extends string>(
  value: object,
  keys: readonly K[],
  name: string,
): Record<K, unknown> {
  const snapshot = {} as Record<K, unknown>
  try {
    for (const key of keys) snapshot[key] = (value as Record<K, unknown>)[key]
  } catch (error) {
    throw new InvalidArgumentError(`${name} could not be read`, { cause: error })
  }
  return snapshot
}

const RECORD_KEYS = ['workId', 'holderId', 'fencingToken', 'expiresAt'] as const

// Records this module froze itself: plain data properties, checked values, no getters and no Proxy,
// so they cannot answer a second read differently and need no second validation. Their Date can be
// changed in place, so the brand keeps the expiry they were made with: a backend that reads a record's
// expiry reads it with recordExpiresAtMs, never from the Date.
// They carry a private field, stamped on the plain object through a base constructor that returns
// it: `#made in x` cannot be faked (a Proxy has no private fields, and nothing outside this module
// can add this one), the record stays a plain object, and stamping costs about what a property
// does, where adding to a WeakSet cost several times the whole record (ephemeron bookkeeping).
class ReturnsItsArgument {
  constructor(target: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the return is the point: it stamps `target`
    return target
  }
}
class MadeHere extends ReturnsItsArgument {
  readonly #expiresAtMs: number
  constructor(target: object, expiresAtMs: number) {
    super(target)
    this.#expiresAtMs = expiresAtMs
  }
  static stamp<T extends object>(target: T, expiresAtMs: number): T {
    new MadeHere(target, expiresAtMs)
    return target
  }
  static has(value: unknown): boolean {
    return typeof value === 'object' && value !== null && #expiresAtMs in value
  }
  static expiresAtMs(record: object): number {
    return (record as MadeHere).#expiresAtMs
  }
}
function remember(workId: string, holderId: string, fencingToken: bigint, expiresAtMs: number): LeaseRecord {
  // Stamped before freezing: whether a frozen object may gain a private field is being changed in the
  // language (it may not, in future engines), so the question never comes up.
  return Object.freeze(
    MadeHere.stamp({ workId, holderId, fencingToken, expiresAt: new Date(expiresAtMs) }, expiresAtMs),
  )
}

/**
 * A record's expiry in epoch ms, as the record was made: for a record a backend returned, or a
 * validator's snapshot, the value it was built from, whatever its `expiresAt` Date was set to since (a
 * Date can be changed in place, frozen record or not). A backend that reads a record's expiry reads it
 * here, never from the Date. Any other object is validated first, as {@link validateRecord} does.
 *
 * ```ts
 * const { record: snapshot } = validateRecordArgs(record, options)
 * const past = Math.min(now - 1, recordExpiresAtMs(snapshot))
 * ```
 */
export function recordExpiresAtMs(record: LeaseRecord): number {
  return MadeHere.expiresAtMs(MadeHere.has(record) ? record : validateRecord(record))
}

/**
 * Checks that `record` has the shape of a {@link LeaseRecord} (it does not say the lease is still held)
 * and returns a frozen copy made of primitives and a fresh Date, read once. Backends use only the copy:
 * an object whose getters answer differently on a second read never reaches the store.
 */
export function validateRecord(record: unknown): LeaseRecord {
  if (MadeHere.has(record)) return record as LeaseRecord
  if (typeof record !== 'object' || record === null) {
    throw new InvalidArgumentError(`record must be a LeaseRecord, got ${describe(record)}`)
  }
  const { workId, holderId, fencingToken, expiresAt } = readOnce(record, RECORD_KEYS, 'record')
  validateId('record.workId', workId)
  validateId('record.holderId', holderId)
  validateFencingToken(fencingToken, 'record.fencingToken')
  const expiresAtMs = dateTime(expiresAt)
  if (Number.isNaN(expiresAtMs)) throw new InvalidArgumentError('record.expiresAt must be a valid Date')
  return remember(workId, holderId, fencingToken, expiresAtMs)
}

/** What every validator hands the backend from the caller's options: the signal, read once. */
export interface ValidatedCallOptions {
  readonly signal?: AbortSignal
}

/**
 * Checks per-call options and throws the signal's reason if it already fired, so an aborted call
 * never reaches the store. Returns the options read once.
 */
export function validateCallOptions(options: unknown): ValidatedCallOptions {
  const { signal } = validateOptions(options, undefined)
  return signal === undefined ? {} : { signal }
}

// What no options read to: one shared object, not a new one on every call without options.
const NO_OPTIONS: { readonly signal?: AbortSignal; readonly extra?: unknown } = Object.freeze({})

/** The option a validator reads besides the signal: checkpoint's sequence, revoke's fencingToken. */
type ExtraOption = 'sequence' | 'fencingToken'

/**
 * Reads `options.signal` (and `options[extra]`, if asked) once each, in that order, and checks the
 * signal. Written out rather than with readOnce and a rest pattern: every call of every backend comes
 * through here, and the runner always passes a signal.
 */
function validateOptions(
  options: unknown,
  extra: ExtraOption | undefined,
): { readonly signal?: AbortSignal; readonly extra?: unknown } {
  if (options === undefined) return NO_OPTIONS
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError(`options must be an object, got ${describe(options)}`)
  }
  let signal: unknown
  let value: unknown
  try {
    signal = (options as { signal?: unknown }).signal
    if (extra !== undefined) value = (options as Record<ExtraOption, unknown>)[extra]
  } catch (error) {
    throw new InvalidArgumentError('options could not be read', { cause: error })
  }
  if (signal === undefined) return value === undefined ? NO_OPTIONS : { extra: value }
  const intactAborted = abortedIfIntact(signal)
  if (intactAborted !== undefined) {
    // Outside the check: what it throws is the signal's reason, the call's outcome.
    if (intactAborted) (signal as AbortSignal).throwIfAborted()
    return { signal: signal as AbortSignal, extra: value }
  }
  const members = signalMembers(signal)
  if (members === undefined) throw new InvalidArgumentError('options.signal must be an AbortSignal')
  // As above. Asked only of a signal that said it aborted: `aborted` is read once, and one that said
  // no is not asked again. Its members as first read: asked twice, a getter could answer otherwise.
  if (members.aborted) {
    members.throwIfAborted.call(signal)
    throw new InvalidArgumentError('options.signal said it had aborted, and its throwIfAborted did not throw')
  }
  const own = linkedSignal(signal as AbortSignal, members.addEventListener)
  // A lookalike that said no above but had fired before: its linked signal remembers.
  if (own.aborted) throw own.reason
  return { signal: own, extra: value }
}

const nativeAborted = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!
// What a backend or its client reads or calls on a signal: one of them shadowed by an own property is
// the caller's code, not the prototype's. Looked up one by one: listing the own names allocates, on
// every call the runner makes.
const SIGNAL_MEMBERS = [
  'aborted',
  'reason',
  'addEventListener',
  'removeEventListener',
  'throwIfAborted',
  'onabort',
]
// Lookalikes already linked, each once: one shared by many calls (as the runner shares its own) must
// not gain a listener per call.
const linkedSignals = new WeakMap<object, AbortSignal>()

/**
 * Whether `signal` has aborted, if it is this realm's AbortSignal with no own property in place of a
 * prototype member (nothing a driver reads or calls on it is the caller's code): then a backend
 * listens to it as it is.
 * Undefined for anything else, a Proxy of a signal included. Checked first, and alone for such a
 * signal (the runner passes one on every call): the duck-typed reads of {@link signalMembers} on top
 * cost a backend call on the memory store a tenth of its instructions.
 */
function abortedIfIntact(signal: unknown): boolean | undefined {
  try {
    if (typeof signal !== 'object' || signal === null) return undefined
    if (Object.getPrototypeOf(signal) !== AbortSignal.prototype) return undefined
    // The brand check before the own members: a native signal's getter, which throws for anything
    // else, so a Proxy's traps are not asked about each member.
    const aborted = nativeAborted.call(signal) as boolean
    for (const member of SIGNAL_MEMBERS) if (Object.hasOwn(signal, member)) return undefined
    return aborted
  } catch {
    // A Proxy, or an object the brand check refuses.
    return undefined
  }
}

/**
 * An AbortSignal of ours that aborts with `signal`, a lookalike: subscribed now, once per signal. A
 * lookalike that cannot be listened to is found out here, before any round trip, not once a driver
 * subscribes as its request goes out, after the write.
 */
function linkedSignal(signal: AbortSignal, addEventListener: AbortSignal['addEventListener']): AbortSignal {
  let linked = linkedSignals.get(signal)
  if (linked === undefined) {
    const controller = new AbortController()
    try {
      addEventListener.call(signal, 'abort', () => controller.abort(reasonOf(signal)), { once: true })
    } catch (error) {
      throw new InvalidArgumentError('options.signal could not be listened to: its addEventListener threw', {
        cause: error,
      })
    }
    linked = controller.signal
    linkedSignals.set(signal, linked)
  }
  return linked
}

function reasonOf(signal: AbortSignal): unknown {
  try {
    return signal.reason
  } catch (error) {
    return error
  }
}

/**
 * Whether `value` is an AbortSignal as every backend call's check takes one: `aborted` a boolean,
 * `addEventListener` and `throwIfAborted` functions, none of them a getter that throws. Duck-typed,
 * so a signal of another realm passes. For a driver's own helpers that take a signal under another
 * name (`abortSignal`), to refuse a bad one as its own option.
 *
 * ```ts
 * if (!isAbortSignal(options.abortSignal)) throw new InvalidArgumentError('options.abortSignal must be an AbortSignal')
 * ```
 */
export function isAbortSignal(value: unknown): value is AbortSignal {
  return signalMembers(value) !== undefined
}

/** What a call's check reads of a signal that is not an intact AbortSignal of this realm, read once. */
interface SignalMembers {
  readonly aborted: boolean
  readonly addEventListener: AbortSignal['addEventListener']
  readonly throwIfAborted: AbortSignal['throwIfAborted']
}

/**
 * `value`'s members, as an AbortSignal has them; undefined when it is no signal. Duck-typed, so a
 * Proxy of a signal or one from another realm passes; what it cannot answer (a throwing getter,
 * AbortSignal.prototype itself) makes it no signal.
 */
function signalMembers(value: unknown): SignalMembers | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  try {
    const { aborted, addEventListener, throwIfAborted } = value as AbortSignal
    return typeof aborted === 'boolean' &&
      typeof addEventListener === 'function' &&
      typeof throwIfAborted === 'function'
      ? { aborted, addEventListener, throwIfAborted }
      : undefined
  } catch {
    return undefined
  }
}

/** What {@link validateAcquireArgs} returns: the arguments, read once. */
export interface AcquireArgs extends ValidatedCallOptions {
  readonly workId: string
  readonly holderId: string
  readonly ttlMs: number
}

/** Everything {@link Backend.acquire} must check before its round trip. */
export function validateAcquireArgs(
  workId: unknown,
  holderId: unknown,
  ttlMs: unknown,
  options: unknown,
): AcquireArgs {
  validateId('workId', workId)
  validateId('holderId', holderId)
  validateTtl(ttlMs)
  const { signal } = validateOptions(options, undefined)
  return signal === undefined ? { workId, holderId, ttlMs } : { workId, holderId, ttlMs, signal }
}

/** What {@link validateRecordArgs} returns: a frozen snapshot of the record, and the options. */
export interface RecordArgs extends ValidatedCallOptions {
  readonly record: LeaseRecord
}

/** What {@link validateRenewArgs} returns. */
export interface RenewArgs extends RecordArgs {
  readonly ttlMs: number
}

/** What {@link validateCheckpointArgs} returns: the state is a private copy. */
export interface CheckpointArgs extends RenewArgs {
  readonly state: Uint8Array
  /** `options.sequence`, or a fresh {@link nextCheckpointSequence} when the caller gave none. */
  readonly sequence: number
}

/** How {@link validateState} copies the bytes. */
export interface StateCopyOptions {
  /**
   * The backend keeps the bytes after the call (in memory, say): they get a buffer of their own
   * rather than a view of a shared slab. Default: `false`.
   *
   * ```ts
   * const args = validateCheckpointArgs(record, state, ttlMs, maxStateBytes, options, { kept: true })
   * ```
   */
  readonly kept?: boolean
}

/** Checks a checkpoint sequence: a positive safe integer. */
export function validateCheckpointSequence(sequence: unknown): asserts sequence is number {
  if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence) || sequence < 1) {
    throw new InvalidArgumentError(
      `options.sequence must be a positive safe integer, got ${describe(sequence)}`,
    )
  }
}

/** Everything {@link Backend.checkpoint} must check before its round trip. */
export function validateCheckpointArgs(
  record: unknown,
  state: unknown,
  ttlMs: unknown,
  maxStateBytes: number,
  options: unknown,
  copy?: StateCopyOptions,
): CheckpointArgs {
  const snapshot = validateRecord(record)
  const bytes = validateState(state, maxStateBytes, copy)
  validateTtl(ttlMs)
  const { signal, extra: sequence = nextCheckpointSequence() } = validateOptions(options, 'sequence')
  validateCheckpointSequence(sequence)
  return signal === undefined
    ? { record: snapshot, state: bytes, ttlMs, sequence }
    : { record: snapshot, state: bytes, ttlMs, sequence, signal }
}

/** Everything {@link Backend.renew} must check before its round trip. */
export function validateRenewArgs(record: unknown, ttlMs: unknown, options: unknown): RenewArgs {
  const snapshot = validateRecord(record)
  validateTtl(ttlMs)
  const { signal } = validateOptions(options, undefined)
  return signal === undefined ? { record: snapshot, ttlMs } : { record: snapshot, ttlMs, signal }
}

/** What {@link validateRenewManyArgs} returns: frozen record snapshots, in input order. */
export interface RenewManyArgs extends ValidatedCallOptions {
  readonly records: readonly LeaseRecord[]
  /** The holderId every record shares; `undefined` for an empty list. */
  readonly holderId: string | undefined
  readonly ttlMs: number
}

/**
 * Everything `Backend.renewMany` must check before its round trip: `records` an array of at most
 * `maxRecords` well-formed records (each read once, as {@link validateRecord} does) of one holderId,
 * no workId twice, and the ttl and options. The list is read once too: its length, then each index.
 */
export function validateRenewManyArgs(
  records: unknown,
  ttlMs: unknown,
  maxRecords: number,
  options: unknown,
): RenewManyArgs {
  if (!isRecordArray(records)) {
    throw new InvalidArgumentError(`records must be an array of LeaseRecords, got ${describe(records)}`)
  }
  let items: unknown[]
  try {
    const length = records.length
    if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`length ${String(length)}`)
    if (length > maxRecords) {
      throw new InvalidArgumentError(
        `records holds ${length} records; this backend renews at most ${maxRecords} in one call`,
      )
    }
    items = new Array(length)
    for (let i = 0; i < length; i++) items[i] = records[i]
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error
    throw new InvalidArgumentError('records could not be read', { cause: error })
  }
  // Indexed loops over one array, validated in place: a renewMany of 1,000 records is a runner's
  // every renewal, and an iterator's [index, value] pair a record was most of what this allocated.
  const snapshots = items as LeaseRecord[]
  for (let i = 0; i < snapshots.length; i++) {
    try {
      snapshots[i] = validateRecord(snapshots[i])
    } catch (error) {
      if (error instanceof InvalidArgumentError) {
        throw new InvalidArgumentError(`records[${i}]: ${error.message}`, { cause: error })
      }
      throw error
    }
  }
  const holderId = snapshots[0]?.holderId
  const seen = new Set<string>()
  for (let i = 0; i < snapshots.length; i++) {
    const record = snapshots[i]!
    if (record.holderId !== holderId) {
      throw new InvalidArgumentError(
        `records[${i}] is held by another holderId than records[0]: one call renews one holder's leases`,
      )
    }
    // One lookup, not has() then add(): a repeat leaves the size as it was.
    const size = seen.size
    seen.add(record.workId)
    if (seen.size === size) {
      throw new InvalidArgumentError(`records[${i}] repeats workId ${JSON.stringify(record.workId)}`)
    }
  }
  validateTtl(ttlMs)
  return { records: Object.freeze(snapshots), holderId, ttlMs, ...validateCallOptions(options) }
}

// Array.isArray throws only for a revoked Proxy, which is bad input like any other.
function isRecordArray(records: unknown): records is unknown[] {
  try {
    return Array.isArray(records)
  } catch (error) {
    throw new InvalidArgumentError('records could not be read', { cause: error })
  }
}

/** Everything {@link Backend.release} and {@link Backend.readCheckpoint} must check before their round trip. */
export function validateRecordArgs(record: unknown, options: unknown): RecordArgs {
  const snapshot = validateRecord(record)
  const { signal } = validateOptions(options, undefined)
  return signal === undefined ? { record: snapshot } : { record: snapshot, signal }
}

/** What {@link validateRevokeArgs} returns: the workId and the options, read once. */
export interface RevokeArgs extends ValidatedCallOptions {
  readonly workId: string
  /** `options.fencingToken`: revoke only the live lease stored at this token. Absent: whoever holds it. */
  readonly fencingToken?: bigint
}

/**
 * Everything `Backend.revoke` must check before its round trip: the workId, and the options read
 * once (`signal`, then `fencingToken`, a bigint in `1n..`{@link MAX_FENCING_TOKEN} when given). A
 * backend puts the snapshot's token, never `options.fencingToken` read again, into its one
 * conditional write.
 *
 * ```ts
 * const { workId: id, fencingToken, signal } = validateRevokeArgs(workId, options)
 * ```
 */
export function validateRevokeArgs(workId: unknown, options: unknown): RevokeArgs {
  validateId('workId', workId)
  const { signal, extra: fencingToken } = validateOptions(options, 'fencingToken')
  if (fencingToken === undefined) return signal === undefined ? { workId } : { workId, signal }
  validateFencingToken(fencingToken, 'options.fencingToken')
  return signal === undefined ? { workId, fencingToken } : { workId, fencingToken, signal }
}

// The largest magnitude, in ms from the epoch, a Date holds (ECMAScript's TimeClip).
const MAX_DATE_MS = 8.64e15

/**
 * Builds the frozen record a backend returns from `acquire`. The token and the expiry are checked: a
 * store that answers with a token outside `1n..MAX_FENCING_TOKEN`, or an expiry no `Date` can hold,
 * is corrupt, which is a failure of the store (`RangeError`), not a record to hand out. The ids are
 * checked as every call checks them (`InvalidArgumentError`): the validators trust a record made here.
 */
export function createLeaseRecord(
  workId: string,
  holderId: string,
  fencingToken: bigint,
  expiresAtMs: number,
): LeaseRecord {
  // Not only a driver's (with ids it checked): a user rebuilding a record (from LEASE_HELD's holder,
  // say) gets one every validator trusts, so its ids are checked here. An empty holderId is a revoked
  // lease's, which no record may match again.
  validateId('workId', workId)
  validateId('holderId', holderId)
  if (typeof fencingToken !== 'bigint' || fencingToken < 1n || fencingToken > MAX_FENCING_TOKEN) {
    throw new RangeError(
      `the store returned fencing token ${String(fencingToken)}, outside 1..${MAX_FENCING_TOKEN}`,
    )
  }
  // What dateTime (validateRecord) refuses too: NaN, the infinities, and beyond +/-8.64e15 ms. Compared,
  // not tried on a Date: every acquire comes through here, and the record makes its Date anyway.
  if (typeof expiresAtMs !== 'number' || !(expiresAtMs >= -MAX_DATE_MS && expiresAtMs <= MAX_DATE_MS)) {
    throw new RangeError(`the store returned expiry ${String(expiresAtMs)} ms, which no Date holds`)
  }
  return remember(workId, holderId, fencingToken, expiresAtMs)
}

/** Largest `ListOptions.limit`. */
export const MAX_LIST_LIMIT = 1_000
/** `ListOptions.limit` when none is given. */
export const DEFAULT_LIST_LIMIT = 100

/** What {@link validateListArgs} returns: the options, read once, with defaults. */
export interface ListArgs extends ValidatedCallOptions {
  readonly prefix: string
  readonly cursor?: string
  readonly limit: number
}

/** Everything `Backend.list` must check before its round trip. */
export function validateListArgs(options: unknown): ListArgs {
  if (options === undefined) return { prefix: '', limit: DEFAULT_LIST_LIMIT }
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError(`options must be an object, got ${describe(options)}`)
  }
  const {
    prefix = '',
    cursor,
    limit = DEFAULT_LIST_LIMIT,
  } = readOnce(options, ['prefix', 'cursor', 'limit'], 'options')
  if (prefix !== '') validateId('options.prefix', prefix)
  if (cursor !== undefined) validateId('options.cursor', cursor)
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new InvalidArgumentError(
      `options.limit must be an integer in 1..${MAX_LIST_LIMIT}, got ${describe(limit)}`,
    )
  }
  const { signal } = validateCallOptions(options)
  return {
    prefix: prefix as string,
    limit,
    ...(cursor === undefined ? {} : { cursor: cursor as string }),
    ...(signal ? { signal } : {}),
  }
}

/**
 * Orders workIds by Unicode code point, the order of their UTF-8 bytes, which is how SQL binary
 * columns and MongoDB sort them. JavaScript's `<` compares UTF-16 code units instead, which puts
 * astral characters (emoji) before U+E000..U+FFFF.
 */
export function compareWorkIds(a: string, b: string): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.codePointAt(i)!
    const y = b.codePointAt(i)!
    if (x !== y) return x < y ? -1 : 1
    if (x > 0xffff) i++
  }
  return a.length - b.length
}
