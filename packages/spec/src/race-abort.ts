import { type AbortWait, abortWaitsOf, endWait } from './abort-waits.js'

/**
 * Settles with `pending`, or rejects with `signal.reason` as soon as `signal` fires, whichever comes
 * first. For drivers whose client cannot cancel a request: an abort then stops the wait, not the
 * request, so the outcome is unknown, which `CallOptions.signal` tells callers to treat like a lost
 * reply. `pending`'s own failure is still observed (never an unhandled rejection). Calls racing one
 * signal share one listener of it, there only while one of them waits: the signal keeps none once
 * they settled.
 *
 * ```ts
 * const rows = await raceAbort(query.execute(db), options?.signal)
 * ```
 */
export function raceAbort<T>(pending: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return pending
  if (signal.aborted) {
    pending.catch(() => undefined)
    return Promise.reject(signal.reason)
  }
  return new Promise<T>((resolve, reject) => {
    let wait: AbortWait | undefined
    // Observed before subscribing: a signal whose addEventListener throws (one no validator took), or
    // that is no object at all, rejects this promise with that, and `pending` settling later is still
    // no unhandled rejection.
    pending.then(
      (value) => {
        if (wait) endWait(wait)
        resolve(value)
      },
      (error: unknown) => {
        if (wait) endWait(wait)
        reject(error)
      },
    )
    wait = abortWaitsOf(signal).add(reject)
  })
}
