/**
 * A small seeded generator (mulberry32), so `--seed` replays the same schedule: worker roles, the
 * progress at which each strikes, item order and step durations.
 */
export class Random {
  #state: number

  constructor(seed: number) {
    this.#state = seed >>> 0
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0
    let t = this.#state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }

  /** A float in [min, max). */
  between(min: number, max: number): number {
    return min + (max - min) * this.next()
  }

  /** One element of a non-empty list. */
  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.next() * list.length)]!
  }

  /** A shuffled copy. */
  shuffle<T>(list: readonly T[]): T[] {
    const copy = [...list]
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1))
      ;[copy[i], copy[j]] = [copy[j]!, copy[i]!]
    }
    return copy
  }

  /** An independent generator derived from this seed and a label, e.g. one per worker. */
  fork(label: number): Random {
    return new Random(Math.imul((this.#state ^ 0x9e3779b9) >>> 0, 31) + label * 0x85ebca6b)
  }
}
