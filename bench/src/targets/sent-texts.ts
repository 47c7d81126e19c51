import type { StatementTexts } from '../target.js'

/** Which side of a session sent something. */
export type Side = 'worklease' | 'baseline'

/**
 * The distinct statement texts (or command and request shapes) each side of a session sent, for
 * `Session.takeStatementTexts`. With `sampleEvery` above 1 it describes only every n-th send of a
 * side, so a costly description (a walk over a command document) does not tax the cells it watches;
 * what a cycle sends thousands of times is still seen.
 *
 * ```ts
 * const sent = new SentTexts(4)
 * sent.record('baseline', () => describe(command))
 * const { worklease, baseline } = sent.take()
 * ```
 */
export class SentTexts {
  readonly #sampleEvery: number
  readonly #texts = { worklease: new Set<string>(), baseline: new Set<string>() }
  readonly #sends = { worklease: 0, baseline: 0 }

  constructor(sampleEvery = 1) {
    this.#sampleEvery = sampleEvery
  }

  record(side: Side, describe: () => string): void {
    if (this.#sends[side]++ % this.#sampleEvery === 0) this.#texts[side].add(describe())
  }

  /** What each side sent since the last call. */
  take(): StatementTexts {
    const taken = { worklease: [...this.#texts.worklease], baseline: [...this.#texts.baseline] }
    this.#texts.worklease.clear()
    this.#texts.baseline.clear()
    return taken
  }
}
