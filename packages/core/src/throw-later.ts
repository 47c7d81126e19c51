/**
 * @internal Rethrows `error` on the next tick, as `diagnostics_channel` does with a throwing
 * subscriber: a bug of the user's code (a listener, a `random`) to surface, where it must not change
 * what the runner does with a lease in the middle of a transition.
 */
export function throwLater(error: unknown): void {
  process.nextTick(() => {
    throw error
  })
}
