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
   * that fires while a request is in flight rejects the call with its `reason` (never with an error
   * of the store's client, such as the AWS SDK's `AbortError`), without waiting for the store's reply:
   * the rejection comes before the event loop turns again (from the signal's `abort` event, or
   * microtasks and `process.nextTick` callbacks it queues), so no reply is read in between. A backend
   * that already had its answer (an in-process one answers at once) may settle with it
   * instead. After such a rejection the outcome is unknown (the write may have landed): callers treat
   * it like a lost reply. One signal may be shared by several calls in flight at once
   * (`@worklease/core` gives calls that start close together the same one), so a backend removes the
   * listeners it added when its call settles. Anything shaped like a signal is taken (another realm's,
   * a polyfill's); spec's validators subscribe to one that is not this realm's own AbortSignal once,
   * before any round trip, and hand the backend an AbortSignal of its own that follows it: one whose
   * `addEventListener` throws is an `InvalidArgumentError`, never found out after the write.
   *
   * ```ts
   * const giveUp = new AbortController()
   * setTimeout(() => giveUp.abort(new Error('shutting down')), 2_000)
   * try {
   *   await backend.renew(record, 30_000, { signal: giveUp.signal })
   * } catch (error) {
   *   if (error === giveUp.signal.reason) return // our own abort: the renew may or may not have landed
   *   throw error
   * }
   * ```
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
