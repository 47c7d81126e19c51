import type { Clock } from '@worklease/spec'
import type { Timers } from '../src/index.js'

interface Pending {
  at: number
  seq: number
  callback: () => void
}

/**
 * A fake monotonic clock with timers, plus a wall clock for client-clock backends that moves with it.
 * `advance` runs due timers in order, letting promise chains settle between them; `jump` is a process
 * pause: time passes and nothing runs until the next `advance`.
 */
export class ManualTime implements Timers {
  #now = 0
  #seq = 0
  readonly #timers = new Map<number, Pending>()
  /** Extra wall-clock offset: moves the backend's clock without pausing this process. */
  wallOffset = 0
  /** Extra offset of this process's own wall clock ({@link wallNow}): a clock step on this host. */
  localWallOffset = 0
  readonly wall: Clock = { now: () => 1_700_000_000_000 + this.#now + this.wallOffset }

  now(): number {
    return this.#now
  }

  // Near 0 rather than a realistic epoch: a double at 1.7e12 cannot hold the fractional times of
  // backoffs, and the runner uses only differences of this clock.
  wallNow(): number {
    return this.#now + this.localWallOffset
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const seq = ++this.#seq
    this.#timers.set(seq, { at: this.#now + Math.max(0, ms), seq, callback })
    return seq
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number)
  }

  /** Timers not yet fired or cleared. */
  get pending(): number {
    return this.#timers.size
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason)
      const onAbort = () => {
        this.clearTimeout(handle)
        reject(signal?.reason)
      }
      const handle = this.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }, ms)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Lets every pending promise continuation run (the backends under test never do real I/O). */
  async flush(): Promise<void> {
    for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve))
  }

  async advance(ms: number): Promise<void> {
    const target = this.#now + ms
    await this.flush()
    for (;;) {
      let next: Pending | undefined
      for (const timer of this.#timers.values()) {
        if (timer.at > target) continue
        if (!next || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq)) next = timer
      }
      if (!next) break
      this.#timers.delete(next.seq)
      this.#now = Math.max(this.#now, next.at)
      next.callback()
      await this.flush()
    }
    // Never back: a timer's callback may have jumped the clock past the target (a pause).
    this.#now = Math.max(this.#now, target)
    await this.flush()
  }

  /** Runs time forward until `promise` settles (or `limitMs` passes); returns the time it took. */
  async until(promise: Promise<unknown>, limitMs = 60_000, stepMs = 5): Promise<number> {
    const start = this.#now
    let settled = false
    promise.then(
      () => {
        settled = true
      },
      () => {
        settled = true
      },
    )
    await this.flush()
    while (!settled && this.#now - start < limitMs) await this.advance(stepMs)
    return this.#now - start
  }

  /** A process pause: the clocks jump, no timer or continuation runs meanwhile. */
  jump(ms: number): void {
    this.#now += ms
  }

  /**
   * A system suspend: every wall clock (this host's and the store's) moves on, but the monotonic
   * clock, like CLOCK_MONOTONIC on Linux, does not; nothing runs meanwhile.
   */
  suspend(ms: number): void {
    this.wallOffset += ms
    this.localWallOffset += ms
  }
}
