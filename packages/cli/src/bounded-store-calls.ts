import type { Backend, LeasePage, ListOptions, RevokeOptions } from '@worklease/spec'
import { CliError } from './cli-error.js'
import { ExitCode } from './exit-code.js'

/**
 * How long one store call may take. Connecting is bounded by each client's own timeout; this bounds
 * what comes after: a server that is up but never answers (a table another session holds locked, a
 * proxy that swallows replies) would otherwise keep the command waiting for ever.
 */
export const STORE_CALL_TIMEOUT_MS = 10_000

let gaveUp = false

/**
 * Whether a call was given up on: its store client may still be waiting for the reply, and would keep
 * the process alive after the command is done.
 */
export function storeCallGivenUp(): boolean {
  return gaveUp
}

/**
 * One store call that gives up after `timeoutMs`: the call gets a signal, and must reject with its
 * reason when it fires (the drivers do; race a client that does not with `raceAbort`). Giving up is a
 * store failure (exit 1) that says so, followed by `unanswered`.
 *
 * ```ts
 * await boundedStoreCall((signal) => raceAbort(db.listCollections().toArray(), signal), '')
 * ```
 */
export async function boundedStoreCall<T>(
  call: (signal: AbortSignal) => Promise<T>,
  unanswered: string,
  timeoutMs = STORE_CALL_TIMEOUT_MS,
): Promise<T> {
  const signal = AbortSignal.timeout(timeoutMs)
  try {
    return await call(signal)
  } catch (error) {
    if (!signal.aborted || error !== signal.reason) throw error
    gaveUp = true
    throw new CliError(
      `the store failed: it did not answer within ${timeoutMs / 1000} s${unanswered}`,
      ExitCode.STORE_FAILED,
      { cause: error },
    )
  }
}

/**
 * The backend the commands use: every call carries a signal that gives up after `timeoutMs`, and
 * giving up is a store failure (exit 1) that says so. The drivers stop waiting when the signal
 * fires; a statement already sent may still run (a revoke, then, may land later).
 */
export function boundedStoreCalls(backend: Backend, timeoutMs = STORE_CALL_TIMEOUT_MS): Backend {
  const within = <T>(call: (signal: AbortSignal) => Promise<T>, unanswered: string) =>
    boundedStoreCall(call, unanswered, timeoutMs)
  const { list, revoke } = backend
  return {
    capabilities: backend.capabilities,
    // The commands only read and revoke; the rest stays the driver's own, unbounded.
    acquire: backend.acquire.bind(backend),
    checkpoint: backend.checkpoint.bind(backend),
    renew: backend.renew.bind(backend),
    release: backend.release.bind(backend),
    readCheckpoint: backend.readCheckpoint.bind(backend),
    ...(typeof list === 'function'
      ? {
          list: (options?: ListOptions): Promise<LeasePage> =>
            within((signal) => list.call(backend, { ...options, signal }), ''),
        }
      : {}),
    ...(typeof revoke === 'function'
      ? {
          revoke: (workId: string, options?: RevokeOptions): Promise<boolean> =>
            within(
              (signal) => revoke.call(backend, workId, { ...options, signal }),
              ': whether the lease was revoked is unknown (look with worklease show)',
            ),
        }
      : {}),
  }
}
