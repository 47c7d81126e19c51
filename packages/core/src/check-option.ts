import { type Backend, InvalidArgumentError } from '@worklease/spec'
import { bytesCodec, type CheckpointCodec } from './checkpoint-codec.js'
import { DEFAULT_RETRY, type ResolvedRetryPolicy } from './retry-policy.js'
import { MAX_TIMER_MS, systemTimers, type Timers } from './timers.js'

/** @internal How a message names a value that is not of its option's type. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'string')
    return value.length > 40 ? `a string of length ${value.length}` : JSON.stringify(value)
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'number' || typeof value === 'boolean' || value === undefined) return String(value)
  if (typeof value === 'function') return 'a function'
  if (typeof value === 'symbol') return 'a symbol'
  return Array.isArray(value) ? 'an array' : 'an object'
}

/** @internal The one check every numeric option goes through, so every message reads the same. */
export function checkNumber(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new InvalidArgumentError(`${name} must be a number in ${min}..${max}, got ${describeValue(value)}`)
  }
  return value
}

/** @internal {@link checkNumber} for a count: a safe integer. */
export function checkInteger(name: string, value: unknown, min: number, max: number): number {
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) {
    throw new InvalidArgumentError(
      `${name} must be an integer in ${min}..${max}, got ${describeValue(value)}`,
    )
  }
  return value as number
}

/** @internal The one check every on/off option goes through; `undefined` takes the default. */
export function checkBoolean(name: string, value: unknown, defaultValue: boolean): boolean {
  if (value === undefined) return defaultValue
  if (typeof value !== 'boolean') {
    throw new InvalidArgumentError(`${name} must be true or false, got ${describeValue(value)}`)
  }
  return value
}

/** @internal A callback option: called later, where a non-function would throw far from the mistake. */
export function checkFunction<F extends (...args: never[]) => unknown>(name: string, value: unknown): F {
  if (typeof value !== 'function') {
    throw new InvalidArgumentError(`${name} must be a function, got ${describeValue(value)}`)
  }
  return value as F
}

/**
 * @internal A source of randomness for jitter, checked to be a function, whose every answer is kept in
 * [0, 1): NaN reached a timer as a 1 ms delay (a wait that asked the store every millisecond), and a
 * value out of range made delays negative or longer than their cap. Such an answer counts as 0.5, the
 * mean of a fair source, rather than an edge: 0 would make every backoff delay 0.
 */
export function checkRandom(name: string, value: unknown): () => number {
  const random = checkFunction<() => number>(name, value)
  if (random === Math.random) return random
  return () => {
    const answer = random()
    // Only a number: an object's valueOf (or a bigint) would be read again, differently, by its user.
    return typeof answer === 'number' && answer >= 0 && answer < 1 ? answer : 0.5
  }
}

/**
 * @internal Reads `keys` of an options object once each, in that order: what the caller's object
 * answers later (a getter, a Proxy, a change after the call) can no longer differ from what was
 * checked. Inherited properties count, as they do for destructuring. A getter that throws is a bad
 * input too.
 */
export function readFields<K extends string>(
  name: string,
  value: unknown,
  keys: readonly K[],
): { readonly [P in K]: unknown } {
  if (typeof value !== 'object' || value === null) {
    throw new InvalidArgumentError(`${name} must be an object, got ${describeValue(value)}`)
  }
  const fields = {} as { [P in K]: unknown }
  try {
    for (const key of keys) fields[key] = (value as Record<K, unknown>)[key]
  } catch (error) {
    throw new InvalidArgumentError(`${name} could not be read`, { cause: error })
  }
  return fields
}

/** @internal A retry policy with defaults filled in (`defaults` for the fields left out), checked. */
export function resolveRetry(
  retry: unknown,
  name = 'retry',
  defaults: ResolvedRetryPolicy = DEFAULT_RETRY,
  /** Why `maxAttempts` is refused, where nothing would give up after it (else it is read). */
  noAttempts?: string,
): ResolvedRetryPolicy {
  if (retry === undefined || retry === null) return defaults
  const fields = readFields(name, retry, ['initialDelayMs', 'maxDelayMs', 'multiplier', 'maxAttempts'])
  if (noAttempts !== undefined && fields.maxAttempts !== undefined) {
    throw new InvalidArgumentError(`${name}.maxAttempts is not an option here: ${noAttempts}`)
  }
  // From 1 ms: at 0 every delay is 0 (0 × multiplier^n), maxDelayMs notwithstanding, and a wait
  // polls the store without pause.
  // And a default initialDelayMs gives way to a smaller maxDelayMs the caller set.
  const givenMax = fields.maxDelayMs
  const initialDelayMs = checkNumber(
    `${name}.initialDelayMs`,
    fields.initialDelayMs ??
      (typeof givenMax === 'number' && givenMax >= 1
        ? Math.min(defaults.initialDelayMs, givenMax)
        : defaults.initialDelayMs),
    1,
    MAX_TIMER_MS,
  )
  // A default the caller never set gives way to the initialDelayMs they did set.
  const maxDelayMs = checkNumber(
    `${name}.maxDelayMs`,
    fields.maxDelayMs ?? Math.max(defaults.maxDelayMs, initialDelayMs),
    initialDelayMs,
    MAX_TIMER_MS,
  )
  const multiplier = checkNumber(`${name}.multiplier`, fields.multiplier ?? defaults.multiplier, 1, 1_000)
  const maxAttempts = checkInteger(
    `${name}.maxAttempts`,
    fields.maxAttempts ?? defaults.maxAttempts,
    1,
    Number.MAX_SAFE_INTEGER,
  )
  return Object.freeze({ initialDelayMs, maxDelayMs, multiplier, maxAttempts })
}

/**
 * @internal The clocks and timers, checked and kept as they were when checked: each function read
 * once and bound to the object it came from (so a class's methods still see their `this`).
 */
export function checkTimers(name: string, value: unknown): Timers {
  if (value === systemTimers) return systemTimers
  const fields = readFields(name, value, ['now', 'wallNow', 'setTimeout', 'clearTimeout'])
  const now = checkFunction<Timers['now']>(`${name}.now`, fields.now)
  const setTimeout = checkFunction<Timers['setTimeout']>(`${name}.setTimeout`, fields.setTimeout)
  const clearTimeout = checkFunction<Timers['clearTimeout']>(`${name}.clearTimeout`, fields.clearTimeout)
  const timers: Timers = {
    now: now.bind(value),
    setTimeout: setTimeout.bind(value),
    clearTimeout: clearTimeout.bind(value),
  }
  // Optional, and absent means something (measure on the monotonic clock alone): never a stand-in.
  if (fields.wallNow !== undefined) {
    timers.wallNow = checkFunction<NonNullable<Timers['wallNow']>>(`${name}.wallNow`, fields.wallNow).bind(
      value,
    )
  }
  return Object.freeze(timers)
}

/**
 * @internal A codec's two functions, read once and bound to the codec: a checkpoint or read then
 * calls what was checked, whatever the codec object answers later.
 */
export function checkCodec<S>(name: string, value: unknown): CheckpointCodec<S> {
  if (value === bytesCodec) return value as CheckpointCodec<S>
  const fields = readFields(name, value, ['encode', 'decode'])
  const encode = checkFunction<CheckpointCodec<S>['encode']>(`${name}.encode`, fields.encode)
  const decode = checkFunction<CheckpointCodec<S>['decode']>(`${name}.decode`, fields.decode)
  return Object.freeze({ encode: encode.bind(value), decode: decode.bind(value) })
}

/** What every backend has: the runner calls each of these on every lease. */
const REQUIRED_OPERATIONS = ['acquire', 'renew', 'checkpoint', 'release', 'readCheckpoint'] as const

/** @internal A backend as the runner uses it: its capabilities read once, on the same read as checked. */
export interface CheckedBackend {
  readonly backend: Backend
  /** Whether the acquire can bring the checkpoint (declared, and the method is there). */
  readonly acquireWithCheckpoint: boolean
  /** Whether LEASE_HELD names the holder. */
  readonly reportsHolder: boolean
  /** The largest `renewMany` batch; undefined when leases are renewed one by one. */
  readonly renewManyMaxRecords: number | undefined
  /** The largest state a checkpoint may store, read once: every checkpoint is held to it. */
  readonly maxStateBytes: number
}

/**
 * @internal Checks a backend before it is used: it has what the contract requires. A missing one
 * would otherwise fail on every call as a TypeError, which the runner cannot tell from a store
 * failure: retried until the lease is lost. An optional operation is used only where the
 * capabilities declare it and the method is there too (a wrapper that forwards the capabilities but
 * not every operation, as the testing suites' do, is still a backend). The capabilities the runner
 * acts on are read once and returned: a getter answering another `maxRecords` later cannot pass the
 * check with one and be used with another. The backend is used as it is (its methods called on it),
 * not copied.
 */
export function checkBackend(name: string, value: unknown): CheckedBackend {
  const fields = readFields(name, value, [
    'capabilities',
    'renewMany',
    'acquireWithCheckpoint',
    ...REQUIRED_OPERATIONS,
  ])
  for (const operation of REQUIRED_OPERATIONS) {
    if (typeof fields[operation] !== 'function') {
      throw new InvalidArgumentError(
        `${name}.${operation} must be a function (every Backend has it), got ${describeValue(fields[operation])}`,
      )
    }
  }
  const capabilities = readFields(`${name}.capabilities`, fields.capabilities, [
    'renewMany',
    'acquireWithCheckpoint',
    'reportsHolder',
    'maxStateBytes',
  ])
  const maxStateBytes = checkInteger(
    `${name}.capabilities.maxStateBytes`,
    capabilities.maxStateBytes,
    0,
    Number.MAX_SAFE_INTEGER,
  )
  let renewManyMaxRecords: number | undefined
  if (capabilities.renewMany !== undefined && typeof fields.renewMany === 'function') {
    const { maxRecords } = readFields(`${name}.capabilities.renewMany`, capabilities.renewMany, [
      'maxRecords',
    ])
    renewManyMaxRecords = checkInteger(
      `${name}.capabilities.renewMany.maxRecords`,
      maxRecords,
      1,
      Number.MAX_SAFE_INTEGER,
    )
  }
  return {
    backend: value as Backend,
    acquireWithCheckpoint:
      capabilities.acquireWithCheckpoint === true && typeof fields.acquireWithCheckpoint === 'function',
    reportsHolder: capabilities.reportsHolder === true,
    renewManyMaxRecords,
    maxStateBytes,
  }
}

/**
 * @internal An AbortSignal option: an object with a boolean `aborted`, `addEventListener`, and
 * `removeEventListener`, which the runner calls when it stops listening. (`@worklease/spec` also asks a
 * backend call's signal for `throwIfAborted`; the runner never calls it, and never hands a caller's
 * signal to a backend as it is.)
 */
export function checkSignal(name: string, value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined
  const notSignal = () =>
    new InvalidArgumentError(`${name} must be an AbortSignal, got ${describeValue(value)}`)
  if (typeof value !== 'object' || value === null) throw notSignal()
  const fields = readFields(name, value, ['aborted', 'addEventListener', 'removeEventListener'])
  if (
    typeof fields.aborted !== 'boolean' ||
    typeof fields.addEventListener !== 'function' ||
    typeof fields.removeEventListener !== 'function'
  ) {
    throw notSignal()
  }
  return value as AbortSignal
}
