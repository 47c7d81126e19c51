import {
  type AcquiredWithCheckpoint,
  type Backend,
  type BackendCapabilities,
  type CallOptions,
  type CheckpointOptions,
  type CheckpointRead,
  createLeaseRecord,
  FencedError,
  isLeaseHeldError,
  isTokensExhaustedError,
  isWorkleaseError,
  LeaseHeldError,
  type LeasePage,
  type LeaseRecord,
  type ListOptions,
  type RenewOutcome,
  type RevokeOptions,
} from '@worklease/spec'
import type { BackendFactory } from './backend-harness.js'
import { forge, LONG_TTL_MS } from './case-context.js'
import { LATE_HOLDER_READ_CASE } from './groups/acquire-cases.js'
import {
  WITH_CHECKPOINT_CEILING_CASE,
  WITH_CHECKPOINT_REVOKE_CASE,
} from './groups/acquire-with-checkpoint-cases.js'
import { STORE_FAILURE_CASE } from './groups/renew-cases.js'
import { REVOKED_LISTING_CASE } from './groups/revoke-cases.js'
import type { GroupName } from './suite-case.js'

/**
 * A bug any backend could have, made by wrapping a working one. Running the suite over a driver's own
 * backends with each mutant proves that the harness is wired so that the suite can fail: a harness
 * whose `open()` ignored its storage, or a count that never moved, would let mutants through.
 */
export interface Mutant {
  readonly name: string
  /** The group written to catch it; `selfCheck` runs this group and expects a failure in it. */
  readonly caughtBy: GroupName
  /** Whether the mutant can only be seen through `roundTrips()`. */
  readonly needsRoundTrips?: boolean
  /**
   * Whether the mutant breaks an optional operation (`renewMany`, `acquireWithCheckpoint`), so a
   * backend without it skips the mutant.
   */
  readonly needsOptionalOperation?: boolean
  /**
   * The one case that can see the mutant, where it needs what some backends lack (a client clock the
   * case can move, say): a backend on which that case is skipped skips the mutant, with its reason.
   */
  readonly caughtOnlyBy?: string
  wrap(backend: Backend): Backend
}

/**
 * Forwards every call to `inner`: extend it and override one method to write a mutant of your own.
 * A subclass that overrides `acquire` but not `acquireWithCheckpoint` declares no
 * `acquireWithCheckpoint`, so nothing (the Leaser, the suite) takes leases around its `acquire`.
 *
 * ```ts
 * class SlowRenew extends ForwardingBackend {
 *   override async renew(record: LeaseRecord, ttlMs: number) {
 *     await new Promise((resolve) => setTimeout(resolve, 100))
 *     return super.renew(record, ttlMs)
 *   }
 * }
 * ```
 */
export class ForwardingBackend implements Backend {
  #masked: { readonly from: BackendCapabilities; readonly to: BackendCapabilities } | undefined

  constructor(readonly inner: Backend) {}
  get capabilities(): BackendCapabilities {
    const capabilities = this.inner.capabilities
    const own = ForwardingBackend.prototype
    const acquireAlone =
      this.acquire !== own.acquire && this.acquireWithCheckpoint === own.acquireWithCheckpoint
    if (!capabilities.acquireWithCheckpoint || !acquireAlone) return capabilities
    if (this.#masked?.from !== capabilities) {
      const { acquireWithCheckpoint: _, ...rest } = capabilities
      this.#masked = { from: capabilities, to: Object.freeze(rest) }
    }
    return this.#masked.to
  }
  acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions): Promise<LeaseRecord> {
    return this.inner.acquire(workId, holderId, ttlMs, options)
  }
  checkpoint(
    record: LeaseRecord,
    state: Uint8Array,
    ttlMs: number,
    options?: CheckpointOptions,
  ): Promise<void> {
    return this.inner.checkpoint(record, state, ttlMs, options)
  }
  renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void> {
    return this.inner.renew(record, ttlMs, options)
  }
  release(record: LeaseRecord, options?: CallOptions): Promise<void> {
    return this.inner.release(record, options)
  }
  readCheckpoint(record: LeaseRecord, options?: CallOptions): Promise<CheckpointRead> {
    return this.inner.readCheckpoint(record, options)
  }
  // The optional operations exist here whatever `inner` has; `capabilities` (forwarded) says whether
  // they work.
  list(options?: ListOptions): Promise<LeasePage> {
    if (!this.inner.list) return Promise.reject(new TypeError('the inner backend cannot list'))
    return this.inner.list(options)
  }
  revoke(workId: string, options?: RevokeOptions): Promise<boolean> {
    if (!this.inner.revoke) return Promise.reject(new TypeError('the inner backend cannot revoke'))
    return this.inner.revoke(workId, options)
  }
  renewMany(records: readonly LeaseRecord[], ttlMs: number, options?: CallOptions): Promise<RenewOutcome[]> {
    if (!this.inner.renewMany) return Promise.reject(new TypeError('the inner backend cannot renewMany'))
    return this.inner.renewMany(records, ttlMs, options)
  }
  acquireWithCheckpoint(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<AcquiredWithCheckpoint> {
    if (!this.inner.acquireWithCheckpoint) {
      return Promise.reject(new TypeError('the inner backend cannot acquireWithCheckpoint'))
    }
    return this.inner.acquireWithCheckpoint(workId, holderId, ttlMs, options)
  }
}

const mutant = (
  name: string,
  caughtBy: GroupName,
  Wrapper: new (inner: Backend) => Backend,
  needsRoundTrips = false,
): Mutant => ({
  name,
  caughtBy,
  needsRoundTrips,
  needsOptionalOperation: caughtBy === 'renewMany' || caughtBy === 'acquireWithCheckpoint',
  wrap: (backend) => new Wrapper(backend),
})

/**
 * A mutant whose acquireWithCheckpoint is `take`, given the same backend unmutated (a plain
 * {@link ForwardingBackend} over it) and the call's arguments.
 */
function acquireWithCheckpointMutant(
  name: string,
  take: (
    backend: Backend,
    ...args: Parameters<NonNullable<Backend['acquireWithCheckpoint']>>
  ) => Promise<AcquiredWithCheckpoint>,
  needsRoundTrips = false,
): Mutant {
  return mutant(
    name,
    'acquireWithCheckpoint',
    class extends ForwardingBackend {
      override acquireWithCheckpoint(workId: string, holderId: string, ttlMs: number, options?: CallOptions) {
        return take(new ForwardingBackend(this.inner), workId, holderId, ttlMs, options)
      }
    },
    needsRoundTrips,
  )
}

/** A mutant whose acquire throws `change(error)` where the working backend threw `error`. */
function acquireErrorMutant(name: string, change: (error: unknown) => unknown): Mutant {
  return mutant(
    name,
    'acquire',
    class extends ForwardingBackend {
      override async acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions) {
        try {
          return await super.acquire(workId, holderId, ttlMs, options)
        } catch (error) {
          throw change(error)
        }
      }
    },
  )
}

/** A mutant whose listings show every released lease expiring at `expiry(page)`. */
function releasedListingMutant(name: string, expiry: (page: LeasePage) => Date): Mutant {
  return listingMutant(name, (lease, page) =>
    lease.released ? Object.freeze({ ...lease, expiresAt: expiry(page) }) : lease,
  )
}

/** A mutant whose listings show each lease as `change` makes it. */
function listingMutant(
  name: string,
  change: (lease: LeasePage['leases'][number], page: LeasePage) => LeasePage['leases'][number],
): Mutant {
  return {
    ...mutant(
      name,
      'list',
      class extends ForwardingBackend {
        override async list(options?: ListOptions) {
          const page = await super.list(options)
          return { ...page, leases: page.leases.map((lease) => change(lease, page)) }
        }
      },
    ),
    needsOptionalOperation: true,
  }
}

/** A mutant whose acquireWithCheckpoint takes the lease right but changes the read it returns. */
function checkpointMutant(name: string, change: (read: CheckpointRead) => CheckpointRead): Mutant {
  return acquireWithCheckpointMutant(name, async (backend, ...args) => {
    const taken = await backend.acquireWithCheckpoint!(...args)
    return { ...taken, checkpoint: change(taken.checkpoint) }
  })
}

/** Interface-level bugs that the suite must catch on any backend. */
export const mutants: readonly Mutant[] = [
  mutant(
    'renew swallows FENCED',
    'renew',
    class extends ForwardingBackend {
      override async renew(record: LeaseRecord, ttlMs: number, options?: CallOptions) {
        await super.renew(record, ttlMs, options).catch((error: unknown) => {
          if (!isWorkleaseError(error, 'FENCED')) throw error
        })
      }
    },
  ),
  mutant(
    'checkpoint acknowledged but never written',
    'checkpoint',
    class extends ForwardingBackend {
      override async checkpoint() {}
    },
  ),
  mutant(
    'checkpoint reads the state after returning',
    'checkpoint',
    class extends ForwardingBackend {
      override async checkpoint(
        record: LeaseRecord,
        state: Uint8Array,
        ttlMs: number,
        options?: CallOptions,
      ) {
        await new Promise((resolve) => setTimeout(resolve, 1))
        return super.checkpoint(record, state, ttlMs, options)
      }
    },
  ),
  mutant(
    "renew leaves a listener on the caller's signal",
    'badInput',
    class extends ForwardingBackend {
      override async renew(record: LeaseRecord, ttlMs: number, options?: CallOptions) {
        options?.signal?.addEventListener('abort', () => undefined)
        return super.renew(record, ttlMs, options)
      }
    },
  ),
  mutant(
    'release acknowledged but never written',
    'release',
    class extends ForwardingBackend {
      override async release() {}
    },
  ),
  mutant(
    'cleanHandoff always true',
    'handoff',
    class extends ForwardingBackend {
      override async readCheckpoint(record: LeaseRecord, options?: CallOptions) {
        return { ...(await super.readCheckpoint(record, options)), cleanHandoff: true }
      }
    },
  ),
  acquireErrorMutant('LEASE_HELD reported as FENCED', (error) =>
    isLeaseHeldError(error) ? new FencedError(undefined, { cause: error }) : error,
  ),
  {
    // As a driver that reads the holder after the refused write, judging it by a later "now".
    ...acquireErrorMutant(
      'LEASE_HELD names no holder when the lease expires before the driver reads it',
      (error) =>
        isLeaseHeldError(error) && (error.holder?.expiresInMs ?? 0) <= 1
          ? new LeaseHeldError(undefined, { cause: error })
          : error,
    ),
    // The case moves a client clock between the write and the read: server clocks skip it.
    caughtOnlyBy: LATE_HOLDER_READ_CASE,
  },
  mutant(
    'acquire returns a token one too high',
    'acquire',
    class extends ForwardingBackend {
      override async acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions) {
        const record = await super.acquire(workId, holderId, ttlMs, options)
        return createLeaseRecord(workId, holderId, record.fencingToken + 1n, record.expiresAt.getTime())
      }
    },
  ),
  mutant(
    'expiresAt reported in seconds',
    'acquire',
    class extends ForwardingBackend {
      override async acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions) {
        const record = await super.acquire(workId, holderId, ttlMs, options)
        return Object.freeze({
          ...record,
          expiresAt: new Date(Math.floor(record.expiresAt.getTime() / 1000)),
        })
      }
    },
  ),
  mutant(
    'a signal that cannot be listened to is found out after the release landed',
    'badInput',
    class extends ForwardingBackend {
      override async release(record: LeaseRecord, options?: CallOptions) {
        const signal = options?.signal as { addEventListener?: unknown } | undefined
        // As a driver that subscribes as its request goes out; what no driver would take is refused.
        if (signal instanceof AbortSignal || typeof signal?.addEventListener !== 'function')
          return super.release(record, options)
        await super.release(record)
        ;(signal as AbortSignal).addEventListener('abort', () => undefined)
      }
    },
  ),
  mutant(
    'aborted signal ignored',
    'badInput',
    class extends ForwardingBackend {
      override async release(record: LeaseRecord) {
        return super.release(record)
      }
    },
  ),
  mutant(
    'a signal firing mid-call rejects renew with an AbortError of its own, not the reason',
    'badInput',
    class extends ForwardingBackend {
      override renew(record: LeaseRecord, ttlMs: number, options?: CallOptions) {
        const pending = super.renew(record, ttlMs, options)
        const signal = options?.signal
        // Only a real signal: the badInput group also passes ones the backend must refuse.
        if (!(signal instanceof AbortSignal)) return pending
        // What the AWS SDK v3 does with its abortSignal; it removes its listener, so only the reason differs.
        return new Promise<void>((resolve, reject) => {
          const onAbort = () => reject(new DOMException('This operation was aborted', 'AbortError'))
          signal.addEventListener('abort', onAbort, { once: true })
          pending.then(
            () => {
              signal.removeEventListener('abort', onAbort)
              resolve()
            },
            (error: unknown) => {
              signal.removeEventListener('abort', onAbort)
              reject(error)
            },
          )
        })
      }
    },
  ),
  mutant(
    'a signal firing mid-call is left to the reply: renew waits for it',
    'badInput',
    class extends ForwardingBackend {
      override async renew(record: LeaseRecord, ttlMs: number, options?: CallOptions) {
        const signal = options?.signal
        // Refused signals and an aborted one as the driver refuses them; a live one never reaches the
        // store's client, which answers (over the network: a macrotask later at least) whatever the
        // caller does meanwhile.
        if (!(signal instanceof AbortSignal) || signal.aborted) return super.renew(record, ttlMs, options)
        await super.renew(record, ttlMs)
        await new Promise((resolve) => setImmediate(resolve))
      }
    },
  ),
  mutant(
    'renew takes two round trips',
    'roundTrips',
    class extends ForwardingBackend {
      override async renew(record: LeaseRecord, ttlMs: number, options?: CallOptions) {
        await super.renew(record, ttlMs, options)
        await super.renew(record, ttlMs, options)
      }
    },
    true,
  ),
  mutant(
    'renewMany reports outcomes in reverse order',
    'renewMany',
    class extends ForwardingBackend {
      override async renewMany(records: readonly LeaseRecord[], ttlMs: number, options?: CallOptions) {
        return (await super.renewMany(records, ttlMs, options)).reverse()
      }
    },
  ),
  mutant(
    'renewMany reports a refused record as renewed',
    'renewMany',
    class extends ForwardingBackend {
      override async renewMany(records: readonly LeaseRecord[], ttlMs: number, options?: CallOptions) {
        return (await super.renewMany(records, ttlMs, options)).map((): RenewOutcome => 'renewed')
      }
    },
  ),
  mutant(
    "renewMany matches a record by any of the batch's tokens",
    'renewMany',
    class extends ForwardingBackend {
      override async renewMany(records: readonly LeaseRecord[], ttlMs: number, options?: CallOptions) {
        const outcomes = await super.renewMany(records, ttlMs, options)
        const tokens = new Set(records.map((record) => record.fencingToken))
        const renews = (record: LeaseRecord) =>
          super.renew(record, ttlMs, options).then(
            () => true,
            () => false,
          )
        return Promise.all(
          outcomes.map(async (outcome, i): Promise<RenewOutcome> => {
            if (outcome !== 'fenced') return outcome
            for (const fencingToken of tokens) {
              if (await renews(forge(records[i]!, { fencingToken }))) return 'renewed'
            }
            return outcome
          }),
        )
      }
    },
  ),
  releasedListingMutant(
    'release leaves the expiry where it was: list shows a released lease still running',
    (page) => new Date(page.now.getTime() + LONG_TTL_MS),
  ),
  releasedListingMutant(
    'release sets the expiry to now - 1 even when it had expired earlier',
    (page) => new Date(page.now.getTime() - 1),
  ),
  checkpointMutant('acquireWithCheckpoint returns no state', (read) => ({ ...read, state: null })),
  checkpointMutant('acquireWithCheckpoint reports every handoff clean', (read) => ({
    ...read,
    cleanHandoff: true,
  })),
  acquireWithCheckpointMutant(
    'acquireWithCheckpoint is an acquire, then a read',
    async (backend, workId, holderId, ttlMs, options) => {
      const record = await backend.acquire(workId, holderId, ttlMs, options)
      return { record, checkpoint: await backend.readCheckpoint(record, options) }
    },
    true,
  ),
  {
    // As a driver whose list "tidies up" what it reads: it takes over and releases the expired leases
    // it lists, so their next holder is told the handoff was clean.
    ...mutant(
      'list releases the expired leases it lists',
      'list',
      class extends ForwardingBackend {
        override async list(options?: ListOptions) {
          const page = await super.list(options)
          for (const lease of page.leases) {
            if (!lease.free || lease.released) continue
            const taken = await this.inner.acquire(lease.workId, lease.holderId || 'tidy', LONG_TTL_MS)
            await this.inner.release(taken).catch(() => undefined)
          }
          return page
        }
      },
    ),
    needsOptionalOperation: true,
  },
  listingMutant('list shows no holder for a released lease', (lease) =>
    lease.released ? Object.freeze({ ...lease, holderId: '' }) : lease,
  ),
  {
    ...listingMutant('list shows a revoked lease as released', (lease) =>
      lease.holderId === '' && !lease.released ? Object.freeze({ ...lease, released: true }) : lease,
    ),
    caughtBy: 'revoke',
    // Only a backend that both revokes and lists can show it.
    caughtOnlyBy: REVOKED_LISTING_CASE,
  },
  {
    ...listingMutant('list shows no checkpoint for a revoked lease', (lease) =>
      lease.holderId === '' && !lease.released ? Object.freeze({ ...lease, checkpointBytes: null }) : lease,
    ),
    caughtBy: 'revoke',
    caughtOnlyBy: REVOKED_LISTING_CASE,
  },
  {
    // As a driver that fences an expired holder on revoke though the lease was already free.
    ...mutant(
      'revoke of an expired lease returns false but fences its holder',
      'revoke',
      class extends ForwardingBackend {
        override async revoke(workId: string, options?: CallOptions) {
          const ended = await super.revoke(workId, options)
          if (!ended) {
            const taken = await this.inner.acquire(workId, 'revoker', 1).catch(() => undefined)
            if (taken) await this.inner.release(taken).catch(() => undefined)
          }
          return ended
        }
      },
    ),
    needsOptionalOperation: true,
  },
  {
    // As a driver written before revoke took an expected token: it validates the options as call
    // options and ends whoever holds the lease, the holder that took over since the operator looked.
    ...mutant(
      'revoke ignores options.fencingToken',
      'revoke',
      class extends ForwardingBackend {
        override revoke(workId: string, options?: RevokeOptions) {
          if (typeof options !== 'object' || options === null) return super.revoke(workId, options)
          return super.revoke(workId, options.signal === undefined ? {} : { signal: options.signal })
        }
      },
    ),
    needsOptionalOperation: true,
  },
  mutant(
    'checkpoint takes a sequence that is not a positive integer as none given',
    'badInput',
    class extends ForwardingBackend {
      override checkpoint(
        record: LeaseRecord,
        state: Uint8Array,
        ttlMs: number,
        options?: CheckpointOptions,
      ) {
        const sequence = options?.sequence
        if (sequence === undefined || (Number.isSafeInteger(sequence) && sequence >= 1))
          return super.checkpoint(record, state, ttlMs, options)
        return super.checkpoint(
          record,
          state,
          ttlMs,
          options?.signal ? { signal: options.signal } : undefined,
        )
      }
    },
  ),
  {
    ...acquireWithCheckpointMutant(
      'acquireWithCheckpoint at the token ceiling says LEASE_HELD',
      async (backend, ...args) => {
        try {
          return await backend.acquireWithCheckpoint!(...args)
        } catch (error) {
          throw isTokensExhaustedError(error) ? new LeaseHeldError(undefined, { cause: error }) : error
        }
      },
    ),
    // Only a harness that can store the largest token reaches the ceiling.
    caughtOnlyBy: WITH_CHECKPOINT_CEILING_CASE,
  },
  {
    // As a driver that reads the handoff from a "released" flag a revoke never set.
    ...mutant(
      'acquireWithCheckpoint reports a clean handoff after a revoke',
      'acquireWithCheckpoint',
      class extends ForwardingBackend {
        readonly #revoked = new Set<string>()
        override async revoke(workId: string, options?: CallOptions) {
          const ended = await super.revoke(workId, options)
          if (ended) this.#revoked.add(workId)
          return ended
        }
        override async acquireWithCheckpoint(
          workId: string,
          holderId: string,
          ttlMs: number,
          options?: CallOptions,
        ) {
          const taken = await super.acquireWithCheckpoint(workId, holderId, ttlMs, options)
          if (!this.#revoked.delete(workId)) return taken
          return { ...taken, checkpoint: { ...taken.checkpoint, cleanHandoff: true } }
        }
      },
    ),
    // Only a backend that revokes has revoked leases.
    caughtOnlyBy: WITH_CHECKPOINT_REVOKE_CASE,
  },
  {
    // As a driver that maps every error of its client it does not recognise to FENCED.
    ...mutant(
      'renew reports a failure of the store as FENCED',
      'renew',
      class extends ForwardingBackend {
        override async renew(record: LeaseRecord, ttlMs: number, options?: CallOptions) {
          try {
            await super.renew(record, ttlMs, options)
          } catch (error) {
            if (isWorkleaseError(error) || options?.signal?.aborted) throw error
            throw new FencedError(undefined, { cause: error })
          }
        }
      },
    ),
    caughtOnlyBy: STORE_FAILURE_CASE,
  },
]

/** `factory` with every backend it opens wrapped by `mutant`. */
export function mutateFactory(factory: BackendFactory, mutant: Mutant): BackendFactory {
  return async () => {
    const harness = await factory()
    return { ...harness, open: async (options) => mutant.wrap(await harness.open(options)) }
  }
}
