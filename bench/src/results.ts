import type { BatchRenewalResult } from './batch-renewal.js'
import type { ContentionResult } from './contention.js'
import type { ListScaleResult } from './list-scale.js'
import type { Machine } from './machine.js'
import type { PeerSettings, PeerStoreResult } from './peers/peers.js'
import type { PoolFleetResult } from './pool/measure-pool-fleet.js'
import type { PoolStoreName } from './pool/pool-stores.js'
import type { RoundTripResult } from './round-trips.js'
import type { RunnerCostResult } from './runner-cost.js'
import type { Spread } from './stats.js'
import type { WorkleaseTakeover } from './takeover.js'
import type { CellResult, ThroughputSettings } from './throughput.js'

/** One backend's numbers, or why it was skipped. */
export interface BackendResult {
  readonly name: string
  readonly server?: string
  readonly origin?: string
  readonly notes?: readonly string[]
  /** Set when the backend could not be measured (server not reachable, ...). */
  readonly skipped?: string
  readonly throughput?: readonly CellResult[]
  /** The median of the cells' median ratios, and the lowest and highest cell median. */
  readonly ratio?: Spread
  readonly roundTrips?: RoundTripResult
  /**
   * Statements (commands, requests) only one side sent during the throughput cells, as
   * `Session.recordStatements` describes them; both empty when the baseline sent exactly the
   * driver's.
   */
  readonly statementDrift?: {
    readonly sent: number
    readonly onlyWorklease: readonly string[]
    readonly onlyBaseline: readonly string[]
  }
  /** A never-leased workId, then a released one. */
  readonly contention?: readonly ContentionResult[]
  /** worklease's runner taking over after a crash and after a release (issue 15 item 7). */
  readonly takeover?: WorkleaseTakeover
  /** Set when a section failed after the backend opened. */
  readonly error?: string
}

/** Everything latest.json holds. */
export interface BenchResults {
  readonly mode: 'quick' | 'full'
  readonly startedAt: string
  readonly durationSeconds: number
  readonly machine: Machine
  readonly settings: Omit<ThroughputSettings, 'state'> & {
    readonly stateBytes: number
    readonly contentionAcquirers: number
    readonly contentionRounds: number
    readonly takeoverTtlMs: number
    readonly takeoverRounds: number
    readonly peers: PeerSettings
  }
  readonly backends: readonly BackendResult[]
  readonly runnerCost: readonly (RunnerCostResult | { backend: string; error: string })[]
  /** worklease beside the lock libraries users would otherwise pick, per store. */
  readonly peers: readonly PeerStoreResult[]
  /** Listing a 100,000-lease PostgreSQL table page by page (absent when PostgreSQL was not measured). */
  readonly listScale?: ListScaleResult | { readonly error: string }
  /** A LeasePool fleet of real processes per store (issue 18); absent with `--pool none`. */
  readonly pool?: readonly (PoolFleetResult | { readonly store: PoolStoreName; readonly error: string })[]
  /** One process holding many leases with batch renewal and without (issue 19, part 2). */
  readonly batchRenewal?: readonly (
    | BatchRenewalResult
    | { readonly target: string; readonly skipped: string }
  )[]
}
