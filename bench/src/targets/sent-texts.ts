import type { StatementTexts } from '../target.js'

/** Which side of a session sent something. */
export type Side = 'worklease' | 'baseline'

/**
 * The distinct statement texts (or command and request shapes) each side of a session sent while
 * recording, for `Session.recordStatements`. Nothing is described outside a recording, so the other
 * sections (peers) pay nothing for it. With `sampleEvery` above 1 it describes only every n-th send of
 * a side, so a costly description (a walk over a command document) does not tax the cells it watches;
 * what a cycle sends thousands of times is still seen.
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
  readonly #sends = { worklease: 0, baseline: 0 }
  #recording = false

  constructor(sampleEvery = 1) {
    this.#sampleEvery = sampleEvery
  }

  record(side: Side, describe: () => string): void {
    if (this.#recording && this.#sends[side]++ % this.#sampleEvery === 0) this.#texts[side].add(describe())
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
