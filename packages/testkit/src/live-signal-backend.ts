import type {
  AcquiredWithCheckpoint,
  CallOptions,
  CheckpointOptions,
  CheckpointRead,
  LeasePage,
  LeaseRecord,
  ListOptions,
  RenewOutcome,
  RevokeOptions,
} from '@worklease/spec'
import type { BackendHarness } from './backend-harness.js'
import { ForwardingBackend } from './mutants.js'

// Never aborted: the calls must come out exactly as without it.
const LIVE = new AbortController().signal

function withLiveSignal<O extends CallOptions>(options: O | undefined): O {
  return (options?.signal ? options : { ...options, signal: LIVE }) as O
}

/**
 * @internal Every call carries a live AbortSignal (the case's own, when it passes one), as every call
 * the Leaser makes does. A driver whose path with a signal differs from its path without one (another
 * statement, another condition, a read before the write) is judged on the path the runner takes.
 */
export class LiveSignalBackend extends ForwardingBackend {
  override acquire(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<LeaseRecord> {
    return super.acquire(workId, holderId, ttlMs, withLiveSignal(options))
  }
  override acquireWithCheckpoint(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<AcquiredWithCheckpoint> {
    return super.acquireWithCheckpoint(workId, holderId, ttlMs, withLiveSignal(options))
  }
  override checkpoint(
    record: LeaseRecord,
    state: Uint8Array,
    ttlMs: number,
    options?: CheckpointOptions,
  ): Promise<void> {
    return super.checkpoint(record, state, ttlMs, withLiveSignal(options))
  }
  override renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void> {
    return super.renew(record, ttlMs, withLiveSignal(options))
  }
  override release(record: LeaseRecord, options?: CallOptions): Promise<void> {
    return super.release(record, withLiveSignal(options))
  }
  override readCheckpoint(record: LeaseRecord, options?: CallOptions): Promise<CheckpointRead> {
    return super.readCheckpoint(record, withLiveSignal(options))
  }
  override list(options?: ListOptions): Promise<LeasePage> {
    return super.list(withLiveSignal(options))
  }
  override revoke(workId: string, options?: RevokeOptions): Promise<boolean> {
    return super.revoke(workId, withLiveSignal(options))
  }
  override renewMany(
    records: readonly LeaseRecord[],
    ttlMs: number,
    options?: CallOptions,
  ): Promise<RenewOutcome[]> {
    return super.renewMany(records, ttlMs, withLiveSignal(options))
  }
}

/** @internal `harness` with every backend it opens wrapped in a {@link LiveSignalBackend}. */
export function liveSignalHarness(harness: BackendHarness): BackendHarness {
  // Each member named: a harness may be a class, whose methods a spread would not copy.
  const { roundTrips, seedToken, failNextCall, acquireRoundTrips } = harness
  return {
    open: async (options) => new LiveSignalBackend(await harness.open(options)),
    close: () => harness.close(),
    ...(roundTrips ? { roundTrips: () => roundTrips.call(harness) } : {}),
    ...(seedToken ? { seedToken: (workId, token) => seedToken.call(harness, workId, token) } : {}),
    ...(failNextCall ? { failNextCall: () => failNextCall.call(harness) } : {}),
    ...(acquireRoundTrips === undefined ? {} : { acquireRoundTrips }),
  }
}
