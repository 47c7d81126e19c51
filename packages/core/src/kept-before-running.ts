/**
 * @internal Runs `body` once `keep` has been handed the promise of its outcome: code `body` runs
 * synchronously (an abort listener of the user's, which may call back in) already finds it kept.
 *
 * ```ts
 * return keptBeforeRunning((closing) => { this.#closing = closing }, () => this.#close())
 * ```
 */
export function keptBeforeRunning<T>(
  keep: (outcome: Promise<T>) => void,
  body: () => Promise<T>,
): Promise<T> {
  let settle!: (outcome: Promise<T>) => void
  const outcome = new Promise<T>((resolve) => {
    settle = resolve
  })
  keep(outcome)
  settle(body())
  return outcome
}
