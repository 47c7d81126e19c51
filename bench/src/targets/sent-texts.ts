import type { StatementTexts } from '../target.js'

/** Which side of a session sent something. */
export type Side = 'worklease' | 'baseline'

/**
 * The distinct statement texts (or command and request shapes) each side of a session sent while
 * recording, for `Session.recordStatements`. Nothing is described outside a recording, so the other
 * sections (peers) pay nothing for it. With `sampleEvery` above 1 it describes about one send of a side
 * in n, so a costly description (a walk over a command document) does not tax the cells it watches;
 * what a cycle sends thousands of times is still seen. Drawn at random, not every n-th: a lease cycle
 * of exactly n sends (four: acquire, checkpoint, renew, release) showed one of them only.
 *
 * ```ts
 * const sent = new SentTexts(4)
 * const stop = sent.start()
 * sent.record('baseline', () => describe(command))
 * const { worklease, baseline } = stop()
 * ```
 */
export class SentTexts {
  readonly #sampleEvery: number
  readonly #texts = { worklease: new Set<string>(), baseline: new Set<string>() }
  /** xorshift32: a fixed sequence, so a run samples alike every time. */
  #draw = 0x9e3779b9
  #recording = false

  constructor(sampleEvery = 1) {
    this.#sampleEvery = sampleEvery
  }

  record(side: Side, describe: () => string): void {
    if (!this.#recording) return
    if (this.#sampleEvery > 1) {
      let x = this.#draw
      x ^= x << 13
      x ^= x >>> 17
      x ^= x << 5
      this.#draw = x >>> 0
      if (this.#draw % this.#sampleEvery !== 0) return
    }
    this.#texts[side].add(describe())
  }

  /** Starts recording; the function returned stops it and returns what each side sent meanwhile. */
  start(): () => StatementTexts {
    this.#texts.worklease.clear()
    this.#texts.baseline.clear()
    this.#recording = true
    return () => {
      this.#recording = false
      return { worklease: [...this.#texts.worklease], baseline: [...this.#texts.baseline] }
    }
  }
}
