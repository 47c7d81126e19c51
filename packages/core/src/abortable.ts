import { setMaxListeners } from 'node:events'
import { setInterval as nodeSetInterval } from 'node:timers'
import { InvalidArgumentError } from '@worklease/spec'
import { ListenerList } from './listener-list.js'
import type { Timeout, TimeoutQueue } from './timeout-queue.js'
import { MAX_TIMER_MS, type Timers } from './timers.js'

/**
 * @internal A one-shot cancellation for the runner's own bookkeeping: what an AbortController does
 * for the waits the runner never hands out, without an EventTarget, an Event per abort or a
 * DOMException per reason-less abort (each costs microseconds on Node.js 20, more than a whole
 * in-memory store call). Backends and users still get real AbortSignals. `signal` returns the
 * Cancel itself, so code written against an AbortController reads the same.
 */
export class Cancel {
  aborted = false
  /** What `abort` was given; `undefined` if nothing (then AbortSignals linked to it get the default). */
  reason: unknown = undefined
  // Most Cancels get one listener (a call's timeout forwarding to its backend signal): kept in a
  // field; a list only from the second on.
  #listener: ((reason: unknown) => void) | undefined
  #listeners: ListenerList | undefined

  get signal(): Cancel {
    return this
  }

  abort(reason?: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    const listener = this.#listener
    const listeners = this.#listeners
    this.#listener = undefined
    this.#listeners = undefined
    listener?.(reason)
    listeners?.callAll(reason)
  }

  /** Calls `listener` once on abort (at once if aborted already); returns a function that detaches it. */
  subscribe(listener: (reason: unknown) => void): () => void {
    if (this.aborted) {
      listener(this.reason)
      return noop
    }
    if (this.#listener === undefined && this.#listeners === undefined) {
      this.#listener = listener
      return () => {
        if (this.#listener === listener) this.#listener = undefined
      }
    }
    this.#listeners ??= new ListenerList()
    return this.#listeners.add(listener)
  }
}

const noop = () => undefined

/** @internal A caller's signal's reason; a `reason` getter's throw is the reason then. */
export function reasonOf(signal: AbortSignal): unknown {
  try {
    return signal.reason
  } catch (error) {
    return error
  }
}

/**
 * @internal Whether a caller's signal has aborted, read now (it may have since it was checked); one
 * whose `aborted` getter throws is a bad input, never the caller's raw error.
 */
export function isAborted(signal: AbortSignal): boolean {
  try {
    return signal.aborted === true
  } catch (error) {
    throw new InvalidArgumentError('signal could not be read: its aborted getter threw', { cause: error })
  }
}

/** @internal Anything the runner waits on: a user's AbortSignal or one of its own {@link Cancel}s. */
export type Abortable = AbortSignal | Cancel

/**
 * @internal Calls `listener` once when `source` aborts; returns a function that detaches it. Any
 * AbortSignal here is a caller's: one that cannot be listened to is an `InvalidArgumentError`, and
 * one that fails to detach is let be, since detaching runs after the outcome it must not replace.
 */
export function onAbort(source: Abortable, listener: (reason: unknown) => void): () => void {
  if (source instanceof Cancel) return source.subscribe(listener)
  if (isAborted(source)) {
    listener(reasonOf(source))
    return noop
  }
  // A `reason` getter that throws would throw inside the dispatch, where nobody hears it, and leave
  // the wait hanging: its error is the reason then, as it is for a signal aborted already.
  const handler = () => listener(reasonOf(source))
  try {
    source.addEventListener('abort', handler, { once: true })
  } catch (error) {
    throw new InvalidArgumentError('signal could not be listened to: its addEventListener threw', {
      cause: error,
    })
  }
  return () => {
    try {
      source.removeEventListener('abort', handler)
    } catch {
      // The listener stays attached; it only aborts a Cancel nobody waits on any more.
    }
  }
}

/** @internal What {@link raceWithin} is told of the call, and tells its caller besides the race's outcome. */
export interface RaceOptions<T> {
  /** When the call started on the timers' monotonic clock, if the caller read it already. */
  readonly startedAt?: number
  /** The promise settled, whether or not the race was still on: called first, every time. */
  readonly onSettled?: () => void
  /** The promise settled after the race was lost (aborted or timed out): its outcome. */
  readonly onAbandoned?: (outcome: PromiseSettledResult<T>) => void
}

/**
 * @internal Settles like `promise`, or rejects as soon as `signal` aborts (with its reason) or a
 * timeout of `timeouts` passes (with a `TimeoutError` DOMException, like `AbortSignal.timeout`), so a
 * backend that ignores its signal cannot hold the runner past a deadline. The abandoned promise's
 * outcome is observed (no unhandled rejection) and handed to `options.onAbandoned`.
 *
 * One promise and one reaction a call, its timeout and listener dropped the moment the race ends: a
 * race over a linked Cancel, with a `.finally` to detach it and a `.then` to count the call settled,
 * made six promises a call (counted in cycle-cost.test.ts), and a timer of its own per call.
 */
export function raceWithin<T>(
  promise: Promise<T>,
  signal: Abortable,
  timeouts: TimeoutQueue,
  options: RaceOptions<T> = {},
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false
    let timeout: Timeout | undefined
    let detach: () => void = noop
    const end = () => {
      settled = true
      if (timeout !== undefined) timeouts.cancel(timeout)
      detach()
    }
    const lose = (reason: unknown) => {
      if (settled) return
      end()
      // A Cancel aborted without a reason: what a reason-less AbortController.abort() would give.
      reject(reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason)
    }
    // Watched first: a signal that cannot be listened to, or a timeout that cannot be armed, loses the
    // race, and the call already started still settles through onSettled and onAbandoned (or the
    // caller would count it in flight for good, and a late lease would go unreleased).
    promise.then(
      (value) => {
        options.onSettled?.()
        if (settled) return options.onAbandoned?.({ status: 'fulfilled', value })
        end()
        resolve(value)
      },
      (error: unknown) => {
        options.onSettled?.()
        if (settled) return options.onAbandoned?.({ status: 'rejected', reason: error })
        end()
        reject(error)
      },
    )
    try {
      detach = onAbort(signal, lose)
      if (!settled) timeout = timeouts.add(() => lose(timeoutError(timeouts.timeoutMs)), options.startedAt)
    } catch (error) {
      lose(error)
    }
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
export function sleep(timers: Timers, ms: number, ...signals: (Abortable | undefined)[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((signal) => signal?.aborted)) return resolve()
    const detach: (() => void)[] = []
    const done = () => {
      timers.clearTimeout(handle)
      for (const fn of detach) fn()
      resolve()
    }
    const handle = timers.setTimeout(done, Math.max(0, ms))
    for (const signal of signals) if (signal) detach.push(onAbort(signal, done))
  })
}

let pendingWork = 0
let keepAlive: ReturnType<typeof setInterval> | undefined

/**
 * @internal Keeps the process alive until the returned function is called (once): one ref'd Node.js
 * timer that never fires, shared by all pending work and unref'd while there is none (toggling it
 * costs nanoseconds; a timer per call cost a timer-list insert and removal). Independent of the
 * injected timers, which are unref'd (or fake). Made with node:timers' own setInterval, not the
 * global one: being shared, it lives for the whole process, and one made while a test's fake timers
 * stood in for the global would hold no event loop for good (and sit in the fake clock forever).
 */
export function keepProcessAlive(): () => void {
  if (pendingWork++ === 0) {
    keepAlive ??= nodeSetInterval(noop, MAX_TIMER_MS)
    keepAlive.ref()
  }
  let released = false
  return () => {
    if (released) return
    released = true
    if (--pendingWork === 0) keepAlive!.unref()
  }
}

/**
 * @internal What keeps the process alive now: how many calls of {@link keepProcessAlive} are pending
 * and whether the shared timer holds the event loop. Tests read this rather than counting the
 * process's ref'd timers, which also counts the test runner's own.
 */
export function keepAliveState(): { pending: number; refd: boolean } {
  return { pending: pendingWork, refd: keepAlive?.hasRef() ?? false }
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

/** @internal What a call that timed out is aborted with, as `AbortSignal.timeout` would. */
export const timeoutError = (timeoutMs: number): DOMException =>
  new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError')

/**
 * @internal A {@link Cancel} that aborts when any of `signals` aborts, or after `timeoutMs` on
 * `timers` (with a `TimeoutError` DOMException, like `AbortSignal.timeout`). Call `dispose` to detach.
 */
export function linkedCancel(
  timers: Timers,
  signals: readonly (Abortable | undefined)[],
  timeoutMs?: number,
): { cancel: Cancel; dispose: () => void } {
  const cancel = new Cancel()
  const detach: (() => void)[] = []
  for (const signal of signals) {
    if (!signal) continue
    if (signal.aborted) {
      cancel.abort(signal.reason)
      break
    }
    try {
      detach.push(onAbort(signal, (reason) => cancel.abort(reason)))
    } catch (error) {
      for (const fn of detach) fn()
      throw error
    }
  }
  if (timeoutMs !== undefined && Number.isFinite(timeoutMs) && !cancel.aborted) {
    let handle: unknown
    try {
      handle = timers.setTimeout(() => cancel.abort(timeoutError(timeoutMs)), timeoutMs)
    } catch (error) {
      // Timers that refuse: the listeners already attached go too, or each such call left one.
      for (const fn of detach) fn()
      throw error
    }
    detach.push(() => timers.clearTimeout(handle))
  }
  return {
    cancel,
    dispose: () => {
      for (const fn of detach) fn()
    },
  }
}

/**
 * @internal An AbortController for a backend call: aborts when any of `signals` aborts (with its
 * reason), or after `timeoutMs` on `timers` (with a `TimeoutError` DOMException, like
 * `AbortSignal.timeout`). Call `dispose` to detach.
 */
export function linkedController(
  timers: Timers,
  signals: readonly (Abortable | undefined)[],
  timeoutMs?: number,
): { controller: AbortController; dispose: () => void } {
  const controller = new AbortController()
  const { cancel, dispose } = linkedCancel(timers, signals, timeoutMs)
  if (cancel.aborted) controller.abort(cancel.reason)
  else cancel.subscribe((reason) => controller.abort(reason))
  return { controller, dispose }
}
