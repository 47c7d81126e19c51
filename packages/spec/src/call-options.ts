/**
 * Per-call options accepted by every {@link Backend} method.
 *
 * ```ts
 * await backend.renew(record, 30_000, { signal: AbortSignal.timeout(2_000) })
 * ```
 */
export interface CallOptions {
  /**
   * Abandons the call. An already-aborted signal throws its `reason` before any round trip. A signal
   * that fires while a request is in flight may leave the outcome unknown (the write may have landed):
   * callers treat that like a lost reply. One signal may be shared by several calls in flight at
   * once (`@worklease/core` gives calls that start close together the same one), so a backend removes
   * the listeners it added when its call settles.
   */
  signal?: AbortSignal
}

/** Options of {@link Backend.checkpoint}. */
export interface CheckpointOptions extends CallOptions {
  /**
   * The place of this checkpoint among the holder's checkpoints of one lease: a positive safe
   * integer, larger for a checkpoint sent later. The store keeps the largest it has stored for the
   * current token, and a checkpoint with a sequence not above it succeeds without storing its state
   * (it still extends the lease), so a checkpoint that was abandoned and lands late never overwrites
   * a newer one. A retry of the
   * same checkpoint passes the same sequence. Default: {@link nextCheckpointSequence}`()`, drawn when
   * the call is made; pass your own only if you pass it on every checkpoint of the lease.
   *
   * ```ts
   * const sequence = nextCheckpointSequence()
   * for (let attempt = 0; ; attempt++) {
   *   try {
   *     await backend.checkpoint(record, state, 30_000, { sequence, signal: AbortSignal.timeout(2_000) })
   *     break
   *   } catch (error) {
   *     if (isWorkleaseError(error) || attempt === 3) throw error // retry only store failures
   *   }
   * }
   * ```
   */
  sequence?: number
}
