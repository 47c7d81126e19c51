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
   * callers treat that like a lost reply.
   */
  signal?: AbortSignal
}
