import { setMaxListeners } from 'node:events'
import type { Timers } from './timers.js'

/**
 * @internal Settles like `promise`, or rejects with `signal.reason` as soon as `signal` aborts, so a
 * backend that ignores its signal cannot hold the runner past a deadline. The abandoned promise's
 * outcome is observed (no unhandled rejection) and handed to `onAbandoned`.
 */
export function raceSignal<T>(
  promise: Promise<T>,
  signal: AbortSignal,
  onAbandoned?: (outcome: PromiseSettledResult<T>) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false
    const onAbort = () => {
      if (settled) return
      settled = true
      reject(signal.reason)
    }
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        if (settled) return onAbandoned?.({ status: 'fulfilled', value })
        settled = true
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        if (settled) return onAbandoned?.({ status: 'rejected', reason: error })
        settled = true
        reject(error)
      },
    )
  })
}

/**
 * @internal Calls a backend method as if it were a well-behaved async function: a synchronous throw
 * becomes a rejection and a value that is not a promise a resolution. Third-party backends are user
 * code, and the runner must survive their mistakes without an unhandled rejection.
 */
export function invoke<T>(call: () => Promise<T> | T): Promise<T> {
  try {
    return Promise.resolve(call())
  } catch (error) {
    return Promise.reject(error)
  }
}

/** @internal Waits `ms` on `timers`; resolves early (never rejects) when any of `signals` aborts. */
export function sleep(timers: Timers, ms: number, ...signals: (AbortSignal | undefined)[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((signal) => signal?.aborted)) return resolve()
    const done = () => {
      timers.clearTimeout(handle)
      for (const signal of signals) signal?.removeEventListener('abort', done)
      resolve()
    }
    const handle = timers.setTimeout(done, Math.max(0, ms))
    for (const signal of signals) signal?.addEventListener('abort', done, { once: true })
  })
}

// Longest delay a Node.js timer takes without overflowing to 1 ms.
const MAX_TIMER_MS = 2_147_483_647

/**
 * @internal Keeps the process alive until the returned function is called: a ref'd Node.js timer
 * that never fires. Independent of the injected timers, which are unref'd (or fake).
 */
export function keepProcessAlive(): () => void {
  const handle = setInterval(() => undefined, MAX_TIMER_MS)
  return () => clearInterval(handle)
}

/**
 * @internal An AbortController whose signal may carry one listener per concurrent operation (every acquire
 * waiting on a Leaser, every call of a lease): many are expected, so Node's leak warning at 11 would
 * only cry wolf.
 */
export function sharedAbortController(): AbortController {
  const controller = new AbortController()
  setMaxListeners(0, controller.signal)
  return controller
}

/**
 * @internal An AbortController that aborts when any of `signals` aborts, or after `timeoutMs` on
 * `timers` (with a `TimeoutError` DOMException, like `AbortSignal.timeout`). Call `dispose` to detach.
 */
export function linkedController(
  timers: Timers,
  signals: readonly (AbortSignal | undefined)[],
  timeoutMs?: number,
): { controller: AbortController; dispose: () => void } {
  const controller = new AbortController()
  const detach: (() => void)[] = []
  for (const signal of signals) {
    if (!signal) continue
    if (signal.aborted) {
      controller.abort(signal.reason)
      break
    }
    const onAbort = () => controller.abort(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    detach.push(() => signal.removeEventListener('abort', onAbort))
  }
  if (timeoutMs !== undefined && Number.isFinite(timeoutMs) && !controller.signal.aborted) {
    const handle = timers.setTimeout(
      () => controller.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError')),
      timeoutMs,
    )
    detach.push(() => timers.clearTimeout(handle))
  }
  return {
    controller,
    dispose: () => {
      for (const fn of detach) fn()
    },
  }
}
