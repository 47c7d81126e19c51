import { invoke, sharedAbortController, timeoutError } from './abortable.js'
import { TimeoutQueue } from './timeout-queue.js'
import { MAX_TIMER_MS, type Timers } from './timers.js'

/** A slice is this fraction of the timeout: how late, at most, a backend hears that its call timed out. */
const SLICES_PER_TIMEOUT = 16

/** One slice's signal, and whether a timer waits to abort it. */
interface Slice {
  readonly controller: AbortController
  /** Calls starting before this (monotonic ms) share the slice; it aborts `timeoutMs` after. */
  readonly until: number
  /** Backend calls given this slice's signal that have not settled. */
  inFlight: number
  timer: unknown
}

/**
 * @internal The AbortSignals a Leaser's backend calls carry, each aborting with a `TimeoutError` once
 * the call's timeout has passed. Calls that start within one slice of the timeout (a sixteenth) share
 * one signal, which aborts `timeoutMs` after the slice ends: never before any of its calls timed out,
 * at most a slice after. On Node.js 20 a fresh AbortSignal costs microseconds and more in garbage
 * collection: an acquire and release through the Leaser on the memory backend took 21.3 us of CPU
 * with a signal per call and 13.7 us sharing them (in-process, interleaved, Node.js 20). The
 * runner does not wait for these signals: it abandons each call at its own timeout or when its lease
 * ends, so a call's signal only tells the backend it may stop working.
 *
 * A slice sets its timer at its first call and leaves it armed when its calls settle (calls one after
 * another found the slice idle each time, and set and cleared its timer once a call): it fires once,
 * `timeoutMs` after the slice ends, and aborts the signal only if a call is still out.
 *
 * ```ts
 * const signals = new CallSignals(timers, 10_000)
 * await signals.call((signal) => backend.release(record, { signal }))
 * ```
 */
export class CallSignals {
  readonly timeoutMs: number
  /**
   * Where the runner's own waits for these calls time out: exactly at `timeoutMs`, unlike the
   * signals, and one timer for all of them.
   */
  readonly timeouts: TimeoutQueue
  readonly #timers: Timers
  readonly #sliceMs: number
  #current: Slice | undefined
  /** Slices whose timer is set. */
  readonly #armed = new Set<Slice>()

  constructor(timers: Timers, timeoutMs: number) {
    this.#timers = timers
    this.timeoutMs = timeoutMs
    this.timeouts = new TimeoutQueue(timers, timeoutMs)
    // A timeout near the timer's limit leaves no room for a slice: then every call gets its own signal.
    this.#sliceMs = Math.min(timeoutMs / SLICES_PER_TIMEOUT, MAX_TIMER_MS - timeoutMs)
  }

  /** The slice of a call starting `now`: its signal aborts no sooner than `timeoutMs` after it. */
  take(now: number = this.#timers.now()): Slice {
    let slice = this.#current
    if (slice === undefined || now >= slice.until) {
      slice = {
        controller: sharedAbortController(),
        until: now + this.#sliceMs,
        inFlight: 0,
        timer: undefined,
      }
      // Current once armed: timers that refuse leave no slice whose signal never times out.
      this.#arm(slice, now)
      this.#current = slice
    }
    slice.inFlight++
    return slice
  }

  /** The backend call given `slice`'s signal settled (not merely abandoned by the runner). */
  settled(slice: Slice): void {
    slice.inFlight--
  }

  /**
   * Aborts the signal of every call still in flight with `reason`, clears every timer (the Leaser
   * closed): nothing of the Leaser's is left armed.
   */
  abortAll(reason: unknown): void {
    for (const slice of this.#armed) {
      this.#timers.clearTimeout(slice.timer)
      slice.timer = undefined
      if (slice.inFlight > 0) slice.controller.abort(reason)
    }
    this.#armed.clear()
    this.#current = undefined
    this.timeouts.clearIfIdle()
  }

  #arm(slice: Slice, now: number): void {
    const timeoutMs = this.timeoutMs
    slice.timer = this.#timers.setTimeout(
      () => {
        slice.timer = undefined
        this.#armed.delete(slice)
        // The calls that settled need no word, and an abort costs an Event: only for a call still out.
        if (slice.inFlight > 0) slice.controller.abort(timeoutError(timeoutMs))
      },
      slice.until + timeoutMs - now,
    )
    this.#armed.add(slice)
  }

  /** Calls `call` with a signal of the current slice; the slice is told when the call settles. */
  call<T>(call: (signal: AbortSignal) => Promise<T> | T): Promise<T> {
    let slice: Slice
    try {
      slice = this.take()
    } catch (error) {
      // Timers that refuse: the call is not made, and fails as a call, never out of the caller's hands.
      return Promise.reject(error)
    }
    const settled = () => this.settled(slice)
    const pending = invoke(() => call(slice.controller.signal))
    pending.then(settled, settled)
    return pending
  }
}
