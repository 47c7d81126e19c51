import type { PoolState } from './reduce-pool.js'

/** Every item fresh, no workers yet. */
export function initialPoolState(items: readonly string[], steps: number): PoolState {
  return {
    steps,
    workers: {},
    items: Object.fromEntries(
      items.map((id) => [id, { id, token: 0n, stepsDone: 0, moves: 0, clean: 0, unclean: 0, done: false }]),
    ),
    runs: [],
    checkpointed: 0,
    failures: [],
  }
}
