import type { Backend, LeasePage, ListOptions, RevokeOptions } from '@worklease/spec'
import { CliError } from './cli-error.js'
import { ExitCode } from './exit-code.js'

/** What a revoke the CLI cannot see the end of is said to have done. */
export const UNKNOWN_OUTCOME = 'whether the lease was revoked is unknown (look with worklease show)'

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
 * One store call that gives up after `timeoutMs`, or when the caller's own `signal` fires (Ctrl-C):
 * the call gets a signal, and must reject with its reason when it fires (the drivers do; race a
 * client that does not with `raceAbort`). Giving up on time is a store failure (exit 1) that says
 * so, followed by `unanswered`; the caller's abort rejects with the caller's reason, for it to judge.
 *
 * ```ts
 * await boundedStoreCall((signal) => raceAbort(db.listCollections().toArray(), signal), '')
 * ```
 */
export async function boundedStoreCall<T>(
  call: (signal: AbortSignal) => Promise<T>,
  unanswered: string,
  timeoutMs = STORE_CALL_TIMEOUT_MS,
  callerSignal?: AbortSignal,
): Promise<T> {
  const timeout = AbortSignal.timeout(timeoutMs)
  const { signal, dispose } = eitherSignal(timeout, callerSignal)
  try {
    return await call(signal)
  } catch (error) {
    // The client may still be waiting for the reply either way: the process must not wait for it.
    if (callerSignal?.aborted && error === callerSignal.reason) {
      gaveUp = true
      throw error
    }
    if (!timeout.aborted || error !== timeout.reason) throw error
    gaveUp = true
    throw new CliError(
      `the store failed: it did not answer within ${timeoutMs / 1000} s${unanswered}`,
      ExitCode.STORE_FAILED,
      { cause: error },
    )
  } finally {
    dispose()
  }
}

/**
 * A signal that fires with the reason of whichever of `a` and `b` fires first. (AbortSignal.any
 * came in Node.js 20.3; this package supports every Node.js 20.) `dispose` takes its listener off
 * `b`, which may be long-lived (watch's Ctrl-C signal, shared by every read).
 */
function eitherSignal(a: AbortSignal, b: AbortSignal | undefined): { signal: AbortSignal; dispose(): void } {
  if (!b) return { signal: a, dispose: () => undefined }
  const either = new AbortController()
  const onA = () => either.abort(a.reason)
  const onB = () => either.abort(b.reason)
  if (b.aborted) onB()
  else if (a.aborted) onA()
  a.addEventListener('abort', onA, { once: true })
  b.addEventListener('abort', onB, { once: true })
  return {
    signal: either.signal,
    dispose() {
      a.removeEventListener('abort', onA)
      b.removeEventListener('abort', onB)
    },
  }
}

/**
 * The backend the commands use: every call carries a signal that gives up after `timeoutMs` (or
 * when the caller's `signal` fires), and giving up on time is a store failure (exit 1) that says
 * so. The drivers stop waiting when the signal fires; a statement already sent may still run (a
 * revoke, then, may land later).
 */
export function boundedStoreCalls(backend: Backend, timeoutMs = STORE_CALL_TIMEOUT_MS): Backend {
  // A caller's own signal (an interrupt) still ends the call early; the bound adds to it.
  const within = <T>(
    call: (signal: AbortSignal) => Promise<T>,
    unanswered: string,
    callerSignal: AbortSignal | undefined,
  ) => boundedStoreCall(call, unanswered, timeoutMs, callerSignal)
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
            within((signal) => list.call(backend, { ...options, signal }), '', options?.signal),
        }
      : {}),
    ...(typeof revoke === 'function'
      ? {
          revoke: (workId: string, options?: RevokeOptions): Promise<boolean> =>
            within(
              (signal) => revoke.call(backend, workId, { ...options, signal }),
              `: ${UNKNOWN_OUTCOME}`,
              options?.signal,
            ),
        }
      : {}),
  }
}
