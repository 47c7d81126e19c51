import type {
  AcquiredWithCheckpoint,
  Backend,
  BackendCapabilities,
  CallOptions,
  CheckpointRead,
  LeasePage,
  LeaseRecord,
  ListOptions,
  RenewOutcome,
  RevokeOptions,
} from '@worklease/spec'

/**
 * The operations of a {@link Backend} that {@link FaultInjectingBackend} can break: the five every
 * backend has, and the optional `renewMany`.
 */
export type FaultOperation = 'acquire' | 'checkpoint' | 'renew' | 'release' | 'readCheckpoint' | 'renewMany'

/** Which operations a fault applies to: one, several, or `'*'` for all of them. */
export type FaultTarget = FaultOperation | readonly FaultOperation[] | '*'

const OPERATIONS: readonly FaultOperation[] = [
  'acquire',
  'checkpoint',
  'renew',
  'release',
  'readCheckpoint',
  'renewMany',
]

/**
 * The error the wrapper throws for an injected fault. It is deliberately not a `WorkleaseError`: it
 * stands for a failure of the store itself (a reset connection, a timeout), which callers must treat
 * as transient and never as a lease outcome.
 *
 * ```ts
 * backend.failNext('renew', 2)
 * await backend.renew(record, 30_000).catch((error) => error instanceof InjectedFaultError) // true
 * ```
 */
export class InjectedFaultError extends Error {
  /** Looks like a Node.js network error code, so retry logic keyed on `code` sees a transient failure. */
  readonly code = 'ECONNRESET'
  /** The operation the fault was injected into. */
  readonly operation: FaultOperation
  /** Whether the inner backend applied the call before the reply was "lost". */
  readonly applied: boolean

  constructor(operation: FaultOperation, applied: boolean, message?: string) {
    super(message ?? `injected fault in ${operation}${applied ? ' (applied, reply lost)' : ''}`)
    this.name = 'InjectedFaultError'
    this.operation = operation
    this.applied = applied
  }
}

/** Options of {@link FaultInjectingBackend}. */
export interface FaultInjectingBackendOptions {
  /**
   * How the wrapper waits for injected latency. Default: a `setTimeout` that honours the call's
   * signal. Inject one driven by a fake clock to keep tests deterministic.
   *
   * ```ts
   * const backend = new FaultInjectingBackend(inner, { sleep: (ms, signal) => fakeTime.sleep(ms, signal) })
   * ```
   */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>
}

type ErrorSource = unknown | ((operation: FaultOperation) => unknown)

interface PendingFault {
  remaining: number
  lostReply: boolean
  error: ErrorSource | undefined
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

function targets(target: FaultTarget): readonly FaultOperation[] {
  if (target === '*') return OPERATIONS
  return typeof target === 'string' ? [target] : target
}

/**
 * Wraps any {@link Backend} and injects the failures real stores have: transient errors, replies lost
 * after the write was applied, latency, and outages. It counts every call. Lease outcomes
 * (`LEASE_HELD`, `FENCED`, ...) still come from the inner backend, so the contract is kept.
 *
 * ```ts
 * const backend = new FaultInjectingBackend(new MemoryBackend())
 * backend.loseNextReplies('renew')      // the next renew is applied, but the caller gets an error
 * backend.failNext('acquire', 2)       // the next two acquires fail without reaching the store
 * backend.setLatency(200, 'checkpoint') // every checkpoint waits 200 ms before reaching the store
 * backend.setDown(true)                // every call fails until setDown(false)
 * backend.calls.renew                  // how many renews were attempted
 * ```
 */
export class FaultInjectingBackend implements Backend {
  readonly inner: Backend
  /** Calls made through the wrapper per operation, including the ones that failed. */
  readonly calls: Record<FaultOperation, number> = {
    acquire: 0,
    checkpoint: 0,
    renew: 0,
    release: 0,
    readCheckpoint: 0,
    renewMany: 0,
  }
  /** Every call in the order it was made, with its outcome once known; handy for ordering assertions. */
  readonly log: { operation: FaultOperation; outcome: 'pending' | 'ok' | 'error' }[] = []

  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>
  readonly #faults = new Map<FaultOperation, PendingFault[]>()
  readonly #latency = new Map<FaultOperation, number>()
  readonly #replyLatency = new Map<FaultOperation, number>()
  #down: 'error' | 'hang' | false = false
  readonly #hung = new Set<() => void>()

  constructor(inner: Backend, options: FaultInjectingBackendOptions = {}) {
    this.inner = inner
    this.#sleep = options.sleep ?? defaultSleep
  }

  get capabilities(): BackendCapabilities {
    return this.inner.capabilities
  }

  /** Whether the store is currently "down" (see {@link setDown}). */
  get down(): boolean {
    return this.#down !== false
  }

  /** Total calls over every operation. */
  get totalCalls(): number {
    return OPERATIONS.reduce((sum, op) => sum + this.calls[op], 0)
  }

  /**
   * The next `count` calls of `target` fail with `error` (default: an {@link InjectedFaultError})
   * without reaching the inner backend. Faults queue up in the order they were added.
   */
  failNext(target: FaultTarget, count = 1, error?: ErrorSource): this {
    return this.#add(target, { remaining: count, lostReply: false, error })
  }

  /**
   * The next `count` calls of `target` reach the inner backend and are applied, but the caller gets
   * `error` instead of the result: the reply was lost (a timeout after the write landed).
   */
  loseNextReplies(target: FaultTarget, count = 1, error?: ErrorSource): this {
    return this.#add(target, { remaining: count, lostReply: true, error })
  }

  /** Adds `ms` of latency before each call of `target` reaches the inner backend (0 removes it). */
  setLatency(ms: number, target: FaultTarget = '*'): this {
    for (const op of targets(target)) this.#latency.set(op, ms)
    return this
  }

  /**
   * Adds `ms` of latency after the inner backend answered and before the caller sees the answer, as
   * when the reply is slow or the caller's process is paused.
   */
  setReplyLatency(ms: number, target: FaultTarget = '*'): this {
    for (const op of targets(target)) this.#replyLatency.set(op, ms)
    return this
  }

  /**
   * Takes the store down or brings it back. While down, every call fails without being applied:
   * with an {@link InjectedFaultError} at once (`mode: 'error'`, a refused connection), or by hanging
   * until the call's signal aborts or the store comes back and the call fails (`mode: 'hang'`, a
   * black-holed connection).
   */
  setDown(down: boolean, mode: 'error' | 'hang' = 'error'): this {
    this.#down = down ? mode : false
    if (!down) {
      for (const wake of this.#hung) wake()
      this.#hung.clear()
    }
    return this
  }

  /** Removes every pending fault and latency and brings the store back up; counters are kept. */
  reset(): this {
    this.#faults.clear()
    this.#latency.clear()
    this.#replyLatency.clear()
    return this.setDown(false)
  }

  acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions): Promise<LeaseRecord> {
    return this.#call('acquire', options, () => this.inner.acquire(workId, holderId, ttlMs, options))
  }

  /** An acquire for the faults, latencies and counts: the `'acquire'` operation covers both. */
  acquireWithCheckpoint(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<AcquiredWithCheckpoint> {
    if (!this.inner.acquireWithCheckpoint) {
      return Promise.reject(new TypeError('the inner backend cannot acquireWithCheckpoint'))
    }
    return this.#call('acquire', options, () =>
      this.inner.acquireWithCheckpoint!(workId, holderId, ttlMs, options),
    )
  }

  checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number, options?: CallOptions): Promise<void> {
    return this.#call('checkpoint', options, () => this.inner.checkpoint(record, state, ttlMs, options))
  }

  renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void> {
    return this.#call('renew', options, () => this.inner.renew(record, ttlMs, options))
  }

  release(record: LeaseRecord, options?: CallOptions): Promise<void> {
    return this.#call('release', options, () => this.inner.release(record, options))
  }

  readCheckpoint(record: LeaseRecord, options?: CallOptions): Promise<CheckpointRead> {
    return this.#call('readCheckpoint', options, () => this.inner.readCheckpoint(record, options))
  }

  /** Faults apply to the whole call: a store failure is never a per-record outcome. */
  renewMany(records: readonly LeaseRecord[], ttlMs: number, options?: CallOptions): Promise<RenewOutcome[]> {
    if (!this.inner.renewMany) return Promise.reject(new TypeError('the inner backend cannot renewMany'))
    return this.#call('renewMany', options, () => this.inner.renewMany!(records, ttlMs, options))
  }

  /** Passed straight through: operators' reads and revokes are not what the faults are about. */
  list(options?: ListOptions): Promise<LeasePage> {
    if (!this.inner.list) return Promise.reject(new TypeError('the inner backend cannot list'))
    return this.inner.list(options)
  }

  /** Passed straight through, like {@link list}. */
  revoke(workId: string, options?: RevokeOptions): Promise<boolean> {
    if (!this.inner.revoke) return Promise.reject(new TypeError('the inner backend cannot revoke'))
    return this.inner.revoke(workId, options)
  }

  #add(target: FaultTarget, fault: PendingFault): this {
    if (!Number.isSafeInteger(fault.remaining) || fault.remaining < 1) {
      throw new RangeError(`count must be a positive integer, got ${fault.remaining}`)
    }
    // One shared object per call so that a fault aimed at several operations is consumed once.
    for (const op of targets(target)) {
      const queue = this.#faults.get(op) ?? []
      queue.push(fault)
      this.#faults.set(op, queue)
    }
    return this
  }

  #takeFault(op: FaultOperation): PendingFault | undefined {
    const queue = this.#faults.get(op)
    while (queue && queue.length > 0) {
      const fault = queue[0]!
      if (fault.remaining > 0) {
        fault.remaining--
        return fault
      }
      queue.shift()
    }
    return undefined
  }

  #error(op: FaultOperation, fault: PendingFault | undefined, applied: boolean): unknown {
    const source = fault?.error
    if (source === undefined) return new InjectedFaultError(op, applied)
    return typeof source === 'function' ? (source as (operation: FaultOperation) => unknown)(op) : source
  }

  #hang(op: FaultOperation, signal: AbortSignal | undefined): Promise<never> {
    return new Promise((_, reject) => {
      const wake = () => {
        signal?.removeEventListener('abort', onAbort)
        reject(new InjectedFaultError(op, false, `injected outage in ${op}`))
      }
      const onAbort = () => {
        this.#hung.delete(wake)
        reject(signal?.reason)
      }
      if (signal?.aborted) return reject(signal.reason)
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#hung.add(wake)
    })
  }

  async #call<T>(op: FaultOperation, options: CallOptions | undefined, invoke: () => Promise<T>): Promise<T> {
    this.calls[op]++
    const entry: { operation: FaultOperation; outcome: 'pending' | 'ok' | 'error' } = {
      operation: op,
      outcome: 'pending',
    }
    this.log.push(entry)
    try {
      const result = await this.#attempt(op, options, invoke)
      entry.outcome = 'ok'
      return result
    } catch (error) {
      entry.outcome = 'error'
      throw error
    }
  }

  async #attempt<T>(
    op: FaultOperation,
    options: CallOptions | undefined,
    invoke: () => Promise<T>,
  ): Promise<T> {
    const signal = options?.signal
    const latency = this.#latency.get(op) ?? 0
    if (latency > 0) await this.#sleep(latency, signal)
    if (this.#down === 'error') throw new InjectedFaultError(op, false, `injected outage in ${op}`)
    if (this.#down === 'hang') return this.#hang(op, signal)
    const fault = this.#takeFault(op)
    if (fault && !fault.lostReply) throw this.#error(op, fault, false)
    const result = await invoke()
    const replyLatency = this.#replyLatency.get(op) ?? 0
    if (replyLatency > 0) await this.#sleep(replyLatency, signal)
    if (fault?.lostReply) throw this.#error(op, fault, true)
    return result
  }
}
