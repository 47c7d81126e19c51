/**
 * What a request abandoned through `signal` rejects with: the signal's reason where the AWS SDK
 * rejects with an `AbortError` of its own (so that callers can tell their abort from a store
 * failure by `error === signal.reason`), any other error as it is.
 *
 * ```ts
 * await client.send(command, { abortSignal: signal }).catch((error) => {
 *   throw abortReasonOr(error, signal)
 * })
 * ```
 */
export function abortReasonOr(error: unknown, signal: AbortSignal | undefined): unknown {
  // By name rather than instanceof, like the SDK's other errors: the caller's SDK may be another copy.
  return signal?.aborted && error instanceof Error && error.name === 'AbortError' ? signal.reason : error
}
