import { MemoryBackend, MemoryStore } from '@worklease/memory'
import { type Backend, type BackendCapabilities, isInvalidArgumentError } from '@worklease/spec'
import { FaultInjectingBackend, ForwardingBackend } from '@worklease/testkit'
import { afterEach, beforeEach, expect } from 'vitest'
import {
  Leaser,
  type LeaserEventName,
  type LeaserEvents,
  type LeaserOptions,
  type Timers,
} from '../src/index.js'
import { ManualTime } from './manual-time.js'

export const TTL = 1_000
/** Default margin: ttl / 10, so the local deadline is 900 ms after the start of the last success. */
export const DEADLINE = 900
/** Default renew interval: floor(ttl / 3); jitter is off in these tests. */
export const INTERVAL = 333

export type RecordedEvent = {
  [E in LeaserEventName]: { name: E; at: number; event: LeaserEvents[E] }
}[LeaserEventName]

/** The backend as one without `renewMany`: the Leaser then renews each lease with its own `renew`. */
class SingleRenewals extends ForwardingBackend {
  override get capabilities(): BackendCapabilities {
    const { renewMany: _, ...rest } = this.inner.capabilities
    return rest
  }
}

/** What {@link setup} takes besides the Leaser's own options. */
export interface SetupOptions extends Partial<LeaserOptions> {
  /** Renew through `renewMany` (default: one by one, as on a backend without it). */
  batch?: boolean
  /** A backend of the test's own between the MemoryBackend and the fault injector (a scripted reply). */
  wrap?: (memory: MemoryBackend) => Backend
  /** The fake clock, when the test made it first (to count its use with {@link countingTimers}). */
  time?: ManualTime
}

/**
 * A Leaser on a fake clock over a fault-injecting MemoryBackend (renewing one by one unless
 * `batch`), plus `other`: a second "process"
 * over the same store with its own backend (not behind the fault injector), to play the successor.
 */
export function setup(options: SetupOptions = {}) {
  const { batch = false, wrap = (memory) => memory, time = new ManualTime(), ...leaserOptions } = options
  const store = new MemoryStore()
  const memory = new MemoryBackend({ store, clock: time.wall })
  const scripted = wrap(memory)
  // Without `batch`, renewals go one by one, as on a backend without renewMany.
  const inner = batch ? scripted : new SingleRenewals(scripted)
  const backend = new FaultInjectingBackend(inner, { sleep: (ms, signal) => time.sleep(ms, signal) })
  const leaser = new Leaser({
    backend,
    ttlMs: TTL,
    holderId: 'worker-a',
    timers: time,
    renewJitter: 0,
    // random() = 0.5: full-jitter delays are exactly half their cap: 25, 50, 100, ... ms.
    random: () => 0.5,
    ...leaserOptions,
  })
  const other = new MemoryBackend({ store, clock: time.wall })
  // A successor whose clock runs 5 ttls ahead: it takes a lease our holder still thinks is live.
  const ahead = new MemoryBackend({ store, clock: { now: () => time.wall.now() + 5 * TTL } })
  const events: RecordedEvent[] = []
  for (const name of ['acquired', 'renewed', 'renewFailed', 'lost', 'released'] as const) {
    leaser.on(name, (event) => events.push({ name, at: time.now(), event } as RecordedEvent))
  }
  const named = <E extends LeaserEventName>(name: E) =>
    events.filter((e) => e.name === name).map((e) => e as Extract<RecordedEvent, { name: E }>)
  return { time, store, memory, backend, leaser, other, ahead, events, named }
}

/**
 * `time` as a Leaser's timers, counting the timers set and the clock reads. Give it to the Leaser
 * when it is made: a Leaser reads each function of its timers once, then, so patching `time` later
 * counts nothing.
 */
export function countingTimers(time: ManualTime) {
  const counts = { timersSet: 0, clockReads: 0 }
  const timers: Timers = {
    now: () => {
      counts.clockReads++
      return time.now()
    },
    wallNow: () => {
      counts.clockReads++
      return time.wallNow()
    },
    setTimeout: (callback, ms) => {
      counts.timersSet++
      return time.setTimeout(callback, ms)
    },
    clearTimeout: (handle) => time.clearTimeout(handle),
  }
  return { timers, counts }
}

/** `time` as timers, but setTimeout throws ('timers refused') whenever `refuses(delay)` says so. */
export function refusingTimers(time: ManualTime, refuses: (delay: number) => boolean) {
  return {
    now: () => time.now(),
    wallNow: () => time.wallNow(),
    setTimeout: (callback: () => void, delay: number) => {
      if (refuses(delay)) throw new Error('timers refused')
      return time.setTimeout(callback, delay)
    },
    clearTimeout: (handle: unknown) => time.clearTimeout(handle),
  }
}

/** Each call rejects with an `InvalidArgumentError` whose message names what it refused. */
export async function expectRefused(refusals: readonly (readonly [() => Promise<unknown>, RegExp])[]) {
  for (const [call, named] of refusals) {
    const error = await call().catch((e: unknown) => e)
    expect(isInvalidArgumentError(error)).toBe(true)
    expect((error as Error).message).toMatch(named)
  }
}

/** Observes a promise's outcome without awaiting it. */
export function track<T>(promise: Promise<T>) {
  const state: { settled: boolean; value?: T; error?: unknown; rejected: boolean } = {
    settled: false,
    rejected: false,
  }
  promise.then(
    (value) => {
      state.settled = true
      state.value = value
    },
    (error: unknown) => {
      state.settled = true
      state.rejected = true
      state.error = error
    },
  )
  return state
}

export const bytes = (text: string) => new TextEncoder().encode(text)

/**
 * worker-c (through `other`) took `workId`, checkpointed 'page 3' and then crashed, its lease left to
 * expire (or, with `released`, ended cleanly): the predecessor a takeover after it starts from.
 */
export async function predecessorOf(
  { other, time }: Pick<ReturnType<typeof setup>, 'other' | 'time'>,
  workId: string,
  { released = false } = {},
): Promise<void> {
  const record = await other.acquire(workId, 'worker-c', TTL)
  await other.checkpoint(record, bytes('page 3'), TTL)
  if (released) await other.release(record)
  await time.advance(TTL + 1)
}
export const text = (state: Uint8Array | null) => (state === null ? null : new TextDecoder().decode(state))

/** The unhandled rejections of the current test, emptied before each; call once, at a file's top level. */
export function collectUnhandledRejections(): unknown[] {
  return collectProcessEvents('unhandledRejection')
}

/**
 * Errors thrown on a later tick during one test: how a pool or a Leaser reports a listener that threw.
 * Listening here also tells Vitest they are handled (it reports an uncaught exception only when nobody
 * else listens), so call it inside the describe whose tests expect them.
 */
export function collectUncaughtExceptions(): unknown[] {
  return collectProcessEvents('uncaughtException')
}

function collectProcessEvents(event: 'unhandledRejection' | 'uncaughtException'): unknown[] {
  const seen: unknown[] = []
  const onEvent = (error: unknown) => seen.push(error)
  beforeEach(() => {
    seen.length = 0
    process.on(event, onEvent)
  })
  afterEach(() => {
    process.off(event, onEvent)
  })
  return seen
}

/**
 * The capabilities of a test's own backend, which forwards only the operations every backend has: it
 * declares none of the optional ones it could not serve.
 */
export const requiredOnly = ({
  clock,
  maxStateBytes,
  crossConnectionAtomic,
  reportsHolder,
}: BackendCapabilities): BackendCapabilities => ({
  clock,
  maxStateBytes,
  crossConnectionAtomic,
  reportsHolder,
})
