import type { UnitRunner } from './unit-runner.js'

/**
 * @internal Hands a pool member's surplus back a few units at a time. Each unit given up costs the
 * member two calls, its handler's checkpoint and the release; all at once, a rebalance that gives 30
 * units queues 60 calls ahead of the member's own renewals in its client's connection pool, and on a
 * loaded store those renewals reach their leases' local deadlines. A queued unit counts as given up
 * at once (the plan is made); its handler is asked to stop when one of the slots is free.
 */
export class HandBackQueue {
  readonly #slots: number
  #waiting: UnitRunner[] = []
  readonly #stopping = new Set<UnitRunner>()

  constructor(slots: number) {
    this.#slots = slots
  }

  add(runner: UnitRunner): void {
    runner.leave()
    this.#waiting.push(runner)
    this.#next()
  }

  /** `runner`'s run is over (released, lost or done): its slot, if it had one, goes to the next. */
  settled(runner: UnitRunner): void {
    if (!this.#stopping.delete(runner)) this.#waiting = this.#waiting.filter((waiting) => waiting !== runner)
    this.#next()
  }

  #next(): void {
    while (this.#stopping.size < this.#slots && this.#waiting.length > 0) {
      const runner = this.#waiting.shift()!
      this.#stopping.add(runner)
      runner.stop()
    }
  }
}
