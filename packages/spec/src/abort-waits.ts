/** @internal One wait on a signal: its reject, emptied once the wait ended, and where it waits. */
export interface AbortWait {
  reject: ((reason: unknown) => void) | undefined
  readonly waits: AbortWaits
}

/** @internal The wait settled on its own: it is not rejected on an abort. */
export function endWait(wait: AbortWait): void {
  wait.waits.end(wait)
}

/**
 * @internal The waits {@link raceAbort} holds on one signal, behind a single listener that is
 * subscribed while at least one of them waits: calls that overlap on one signal (the runner hands
 * calls that start close together one) share it, where each subscribed its own, an
 * `addEventListener` and a `removeEventListener` on a Node.js AbortSignal a call. Once the last
 * wait ends the listener goes too, so a signal keeps none after its calls settled.
 *
 * The waits are an array, not a Set: a signal that lives long while calls come and go would make a
 * Set rehash every few additions, and V8 keeps each old table's entries alive until a full
 * collection. A wait that ended is emptied at once; the array drops the empty ones when they are more
 * than half of it, plus 16.
 */
class AbortWaits {
  readonly #signal: AbortSignal
  #waits: AbortWait[] = []
  #live = 0
  #emptied = 0
  readonly #onAbort = () => this.#abortAll(this.#signal.reason)

  constructor(signal: AbortSignal) {
    this.#signal = signal
  }

  /**
   * Rejects `reject` with the signal's reason when it aborts; returns the wait, for {@link end}.
   * Throws what the signal's `addEventListener` throws (a lookalike no validator took).
   */
  add(reject: (reason: unknown) => void): AbortWait {
    const wait: AbortWait = { reject, waits: this }
    // Counted before subscribing: a lookalike may call its listener at once, and that must find it.
    this.#waits.push(wait)
    if (++this.#live > 1) return wait
    try {
      this.#signal.addEventListener('abort', this.#onAbort, { once: true })
    } catch (error) {
      this.#waits.pop()
      this.#live--
      throw error
    }
    return wait
  }

  /** The wait settled on its own: it is not rejected on an abort. */
  end(wait: AbortWait): void {
    if (wait.reject === undefined) return
    wait.reject = undefined
    if (--this.#live === 0) {
      this.#waits = []
      this.#emptied = 0
      try {
        this.#signal.removeEventListener('abort', this.#onAbort)
      } catch {
        // A lookalike's: its listener only rejects waits that are over.
      }
    } else if (++this.#emptied * 2 > this.#waits.length + 32) {
      this.#waits = this.#waits.filter((entry) => entry.reject !== undefined)
      this.#emptied = 0
    }
  }

  #abortAll(reason: unknown): void {
    const waits = this.#waits
    this.#waits = []
    this.#live = 0
    this.#emptied = 0
    for (const wait of waits) {
      const reject = wait.reject
      wait.reject = undefined
      reject?.(reason)
    }
  }
}

// Kept for the signal's life, listener or not: a WeakMap that gained and lost an entry per call would
// churn its hash table (see above).
const waitsBySignal = new WeakMap<AbortSignal, AbortWaits>()

/** @internal The waits on `signal`. */
export function abortWaitsOf(signal: AbortSignal): AbortWaits {
  let waits = waitsBySignal.get(signal)
  if (waits === undefined) {
    waits = new AbortWaits(signal)
    waitsBySignal.set(signal, waits)
  }
  return waits
}
