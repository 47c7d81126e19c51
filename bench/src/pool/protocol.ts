// Messages between the pool bench's parent and its member processes (IPC, advanced serialization,
// so tokens stay bigint). Times are epoch milliseconds with sub-millisecond precision
// (performance.timeOrigin + performance.now()), comparable across processes on one machine.

/** Where a member's leases live: plain data, sent to each child. */
export type PoolStoreSpec =
  | { readonly kind: 'sqlite'; readonly file: string }
  | { readonly kind: 'postgres' | 'mariadb'; readonly url: string; readonly table: string }

/** What a member is told when it is forked. */
export interface MemberConfig {
  readonly holderId: string
  readonly store: PoolStoreSpec
  readonly group: string
  readonly units: number
  readonly ttlMs: number
}

/** Parent → member. */
export type ParentMessage = { readonly type: 'start' } | { readonly type: 'close' }

/** Member → parent. */
export type MemberMessage =
  | { readonly type: 'ready' }
  /** The handler started on a unit it just acquired; `cleanHandoff` as its readCheckpoint said. */
  | {
      readonly type: 'taken'
      readonly unit: string
      readonly token: bigint
      readonly cleanHandoff: boolean
      readonly startedAt: number
      readonly at: number
    }
  /** The handler returned: asked to stop with the lease still held (`consent`), or the lease was lost. */
  | {
      readonly type: 'ended'
      readonly unit: string
      readonly token: bigint
      readonly consent: boolean
      readonly at: number
    }
  /** The pool released a unit it gave up. */
  | { readonly type: 'released'; readonly unit: string; readonly at: number }
  | { readonly type: 'lost'; readonly unit: string; readonly at: number }
  /** The member's Leaser lost a lease (a unit's or its membership), and why. */
  | { readonly type: 'leaseLost'; readonly workId: string; readonly reason: string }
  | { readonly type: 'rebalanceFailed'; readonly message: string }
  /** The longest the member's event loop was blocked in the last second (a starved process shows here). */
  | { readonly type: 'lag'; readonly maxMs: number }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'closed' }
  | { readonly type: 'trace'; readonly text: string }
