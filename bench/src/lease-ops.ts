/**
 * The four calls of a lease cycle, as the benchmark drives them. Both sides of every comparison
 * implement it: worklease (a `Backend`, wrapped as thinly as possible) and the hand-written baseline
 * (the same statements or commands sent straight through the same client). `H` is whatever the side
 * needs to name a held lease: a `LeaseRecord` for worklease, a plain object for the baseline.
 *
 * ```ts
 * const held = await ops.acquire('job-1', 'worker-a', 30_000)
 * if (held) await ops.release(held)
 * ```
 */
export interface LeaseOps<H = unknown> {
  /** Takes the lease, or resolves `null` (or rejects with an error {@link isHeld} knows) when someone holds it. */
  acquire(workId: string, holderId: string, ttlMs: number): Promise<H | null>
  /**
   * For a side whose acquire rejects when the lease is held: which errors mean "held". The harness
   * catches them itself, so neither side pays for an adapter (an async wrapper around worklease's
   * acquire cost ~0.2 us a call, a quarter of the memory backend's whole acquire).
   */
  isHeld?(error: unknown): boolean
  checkpoint(held: H, state: Uint8Array, ttlMs: number): Promise<void>
  renew(held: H, ttlMs: number): Promise<void>
  release(held: H): Promise<void>
}

/** What a baseline needs to name a lease it holds; tokens stay exact, as a careful hand-writer keeps them. */
export interface BaselineLease {
  readonly workId: string
  readonly holderId: string
  readonly token: bigint
}

/** A hand-written baseline's reaction to a write that matched nothing: there is no error taxonomy to pick from. */
export class LostLeaseError extends Error {
  constructor(operation: string) {
    super(`${operation} matched no lease`)
  }
}
