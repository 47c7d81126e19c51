/**
 * How far the host's wall clock is ahead of its monotonic one, in ms, read so that a process
 * descheduled between the two reads does not see a step: the wall clock between two monotonic reads,
 * again while those lie more than a millisecond apart.
 */
export function wallClockLead(): number {
  for (let attempt = 1; ; attempt++) {
    const before = performance.now()
    const wall = Date.now()
    const after = performance.now()
    if (after - before < 1 || attempt === 5) return wall - performance.timeOrigin - (before + after) / 2
  }
}

/**
 * Watches the host's wall clock against its monotonic one while a case runs. Stores on a server clock
 * read the wall clock; when it is stepped (one CI run saw it jump 1.08 s ahead), every lease on the
 * store ends that much early or late by the monotonic clock the Leaser's deadline runs on, which no
 * safety margin of a few hundred ms can absorb.
 */
export class HostClockSteps {
  readonly #read: () => number
  readonly #timer: ReturnType<typeof setInterval>
  #last: number
  #largest = 0

  constructor(options: { readonly everyMs?: number; readonly read?: () => number } = {}) {
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

/** A step of the wall clock smaller than this cannot break a case of the suite (margins are 300 ms). */
export const HOST_CLOCK_STEP_MS = 100

/**
 * Runs `attempt`; if it fails while the host's wall clock stepped by `HOST_CLOCK_STEP_MS` or more, says
 * so and runs it once more (the case's premise, a store clock that advances with the monotonic one,
 * did not hold). A failure without a step, or a second failure, is the case's.
 */
export async function againAfterHostClockStep(
  suite: string,
  name: string,
  attempt: () => Promise<void>,
  watch: () => HostClockSteps = () => new HostClockSteps(),
  warn: (message: string) => void = console.warn,
): Promise<void> {
  const steps = watch()
  try {
    await attempt()
    return
  } catch (error) {
    const step = steps.stop()
    if (Math.abs(step) < HOST_CLOCK_STEP_MS) throw error
    warn(
      `${suite}: the host's wall clock stepped ${step > 0 ? '+' : ''}${Math.round(step)} ms during "${name}", ` +
        `so the store's clock moved under its leases; running it again. It failed with: ${String(error)}`,
    )
  } finally {
    steps.stop()
  }
  await attempt()
}
