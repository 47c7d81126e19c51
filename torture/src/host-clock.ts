/** The host's monotonic clock in ms: CLOCK_MONOTONIC on Linux, shared by every process on the host. */
export const monotonicNow = (): number => Number(process.hrtime.bigint()) / 1e6

/**
 * Both host clocks, read together: the monotonic time, and how far the wall clock is ahead of it. A
 * process descheduled between the two reads (20 ms and more on this loaded 2-core machine) would see a
 * step that never happened, so the wall clock is read between two monotonic reads, and the three again
 * while those lie more than a millisecond apart.
 */
export function readHostClocks(): { monotonic: number; lead: number } {
  for (let attempt = 1; ; attempt++) {
    const before = monotonicNow()
    const wall = Date.now()
    const after = monotonicNow()
    if (after - before < 1 || attempt === 5) return { monotonic: after, lead: wall - (before + after) / 2 }
  }
}

/**
 * How far the host's wall clock (CLOCK_REALTIME, which every driver and server reads as "now") is
 * ahead of its monotonic clock, in ms. A run takes it once as its reference; each history line records
 * how far it has moved since (`d`), and the loader counts that as clock offset of every process alike.
 * It moves when the wall clock is stepped or slewed: one CI run saw it jump 1.08 s at once.
 */
export const hostClockReference = (): number => readHostClocks().lead

/** What {@link HostClockWatch} saw over a run, in ms against the run's reference. */
export interface HostClockMoves {
  readonly least: number
  readonly most: number
  /** The largest change between two samples in a row, signed, and when it was seen (ms into the watch). */
  readonly largestStep: number
  readonly largestStepAt: number
}

/**
 * Samples the host's wall clock against its monotonic one through a run, so a report can say whether
 * it moved (a step a second ahead ends every lease on a store's clock a second early).
 */
export class HostClockWatch {
  readonly #reference: number
  readonly #started = monotonicNow()
  readonly #timer: NodeJS.Timeout
  #last = 0
  #moves: HostClockMoves = { least: 0, most: 0, largestStep: 0, largestStepAt: 0 }

  constructor(reference: number, everyMs = 100) {
    this.#reference = reference
    this.#last = readHostClocks().lead - reference
    this.#timer = setInterval(() => this.sample(), everyMs)
    this.#timer.unref()
  }

  sample(): void {
    const { monotonic: at, lead } = readHostClocks()
    const move = lead - this.#reference
    const step = move - this.#last
    this.#last = move
    const { least, most, largestStep, largestStepAt } = this.#moves
    this.#moves = {
      least: Math.min(least, move),
      most: Math.max(most, move),
      ...(Math.abs(step) > Math.abs(largestStep)
        ? { largestStep: step, largestStepAt: at - this.#started }
        : { largestStep, largestStepAt }),
    }
  }

  stop(): HostClockMoves {
    clearInterval(this.#timer)
    this.sample()
    return this.#moves
  }
}
