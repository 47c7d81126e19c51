/**
 * How far the host's wall clock is ahead of its monotonic one, in ms, read so that a process
 * descheduled between the two reads does not see a step: the wall clock between two monotonic reads,
 * again while those lie more than a millisecond apart.
 *
 * ```ts
 * const before = wallClockLead()
 * // ... later: a difference of a second or more means the wall clock was stepped
 * const stepped = wallClockLead() - before
 * ```
 */
export function wallClockLead(): number {
  for (let attempt = 1; ; attempt++) {
    const before = performance.now()
    const wall = Date.now()
    const after = performance.now()
    if (after - before < 1 || attempt === 5) return wall - performance.timeOrigin - (before + after) / 2
  }
}

/** Options of {@link HostClockSteps}. */
export interface HostClockStepsOptions {
  /**
   * How often to compare the two clocks, in ms. Default: 50.
   *
   * ```ts
   * const steps = new HostClockSteps({ everyMs: 10 })
   * ```
   */
  readonly everyMs?: number
  /**
   * Reads the wall clock's lead over the monotonic one. Default: {@link wallClockLead}; tests of a
   * suite's rule give their own.
   *
   * ```ts
   * let lead = 0
   * const steps = new HostClockSteps({ read: () => lead })
   * ```
   */
  readonly read?: () => number
}

/**
 * Watches the host's wall clock against its monotonic one while a test runs. Stores on a server clock
 * read the wall clock; when it is stepped (one CI run here saw it jump 1.08 s ahead), every lease on
 * the store ends that much early or late by the monotonic clock a runner's deadline runs on, which no
 * safety margin of a few hundred ms can absorb.
 *
 * ```ts
 * const steps = new HostClockSteps()
 * await runTheCase()
 * const largest = steps.stop() // signed, in ms
 * ```
 */
export class HostClockSteps {
  readonly #read: () => number
  readonly #timer: ReturnType<typeof setInterval>
  #last: number
  #largest = 0

  constructor(options: HostClockStepsOptions = {}) {
    this.#read = options.read ?? wallClockLead
    this.#last = this.#read()
    this.#timer = setInterval(() => this.#sample(), options.everyMs ?? 50)
    this.#timer.unref?.()
  }

  #sample(): void {
    const lead = this.#read()
    const step = lead - this.#last
    this.#last = lead
    if (Math.abs(step) > Math.abs(this.#largest)) this.#largest = step
  }

  /** Stops watching; the largest step between two samples in a row, signed, in ms. */
  stop(): number {
    clearInterval(this.#timer)
    this.#sample()
    return this.#largest
  }
}

/**
 * A step of the wall clock smaller than this cannot break a case of the worklease suites (their
 * margins are 300 ms or more).
 */
export const HOST_CLOCK_STEP_MS = 100

/**
 * Runs `attempt`; if it fails while the host's wall clock stepped by {@link HOST_CLOCK_STEP_MS} or
 * more, says so and runs it once more: the case's premise, a store clock that advances with the
 * monotonic one, did not hold. A failure without a step, or a second failure, is the case's. The
 * conformance, Leaser and pool suites run every case through it.
 *
 * ```ts
 * test('a lease ends after its ttl', () =>
 *   againAfterHostClockStep('my suite', 'a lease ends after its ttl', async () => {
 *     // ... waits on real time against a server's clock
 *   }),
 * )
 * ```
 */
export async function againAfterHostClockStep<T>(
  suite: string,
  name: string,
  attempt: () => Promise<T>,
  watch: () => HostClockSteps = () => new HostClockSteps(),
  warn: (message: string) => void = console.warn,
): Promise<T> {
  const steps = watch()
  let outcome: { readonly value: T } | { readonly error: unknown }
  try {
    outcome = { value: await attempt() }
  } catch (error) {
    outcome = { error }
  }
  const step = steps.stop()
  if ('value' in outcome) return outcome.value
  if (Math.abs(step) < HOST_CLOCK_STEP_MS) throw outcome.error
  warn(
    `${suite}: the host's wall clock stepped ${step > 0 ? '+' : ''}${Math.round(step)} ms during "${name}", ` +
      `so the store's clock moved under its leases; running it again. It failed with: ${String(outcome.error)}`,
  )
  return attempt()
}
