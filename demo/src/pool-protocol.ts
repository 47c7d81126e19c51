import type { StoreSpec } from './protocol.js'

/** The pool every `--pool` worker joins. */
export const DEMO_POOL_GROUP = 'demo-pool'

/** Everything a pool worker is told at start. */
export interface PoolWorkerConfig {
  name: string
  store: StoreSpec
  items: string[]
  steps: number
  stepMs: number
  ttlMs: number
  seed: number
  fence: boolean
}

/**
 * Pool worker → coordinator. Times (`at`) are epoch milliseconds from the worker's own clock
 * (performance.timeOrigin + performance.now()), so runs of one item by different workers compare.
 */
export type PoolWorkerEvent =
  | { type: 'ready'; holderId: string; pid: number }
  /** The handler started on an item the pool took; what readCheckpoint said. */
  | { type: 'taken'; item: string; token: bigint; cleanHandoff: boolean; stepsDone: number; at: number }
  | { type: 'claimed'; item: string; token: bigint; accepted: boolean }
  | { type: 'checkpointed'; item: string; token: bigint; step: number }
  | { type: 'refused'; item: string; token: bigint; step: number }
  /** The pool asked for the item back (a rebalance or the worker leaving). */
  | { type: 'givingUp'; item: string }
  /**
   * The handler returned: `done` (all steps), `consent` (asked to stop, lease still held, last step
   * checkpointed) or `lost` (the lease was lost).
   */
  | {
      type: 'ended'
      item: string
      token: bigint
      how: 'done' | 'consent' | 'lost'
      stepsDone: number
      at: number
    }
  | { type: 'released'; item: string }
  /** A rebalance failed (the pool tries again at the next one); not a failure of the run by itself. */
  | { type: 'rebalanceFailed'; message: string }
  /** The worker's Leaser lost its membership lease (it renews too late on a busy machine). */
  | { type: 'membershipLost'; reason: string }
  | { type: 'failed'; message: string }
  | { type: 'exiting' }

/** Coordinator → pool worker. SIGTERM is the clean leave; `finish` is sent when every item is done. */
export type PoolCoordinatorMessage = { type: 'start'; config: PoolWorkerConfig } | { type: 'finish' }
