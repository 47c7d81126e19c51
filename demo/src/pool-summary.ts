import type { PoolState } from './reduce-pool.js'

/**
 * One line of the pool's shape now: items per live worker, how many items moved and how cleanly,
 * and how far the work is.
 *
 * ```ts
 * poolSummary(state) // 'w1 6  w2 6  w3 6  w4 6 | moves 0 (clean 0, unclean 0) | done 0/24'
 * ```
 */
export function poolSummary(state: PoolState): string {
  const live = Object.values(state.workers).filter((worker) =>
    ['starting', 'running', 'leaving'].includes(worker.status),
  )
  const counts = live.map((worker) => `${worker.name} ${worker.items.length}`).join('  ')
  const items = Object.values(state.items)
  const moves = items.reduce((sum, item) => sum + item.moves, 0)
  const clean = items.reduce((sum, item) => sum + item.clean, 0)
  const unclean = items.reduce((sum, item) => sum + item.unclean, 0)
  const done = items.filter((item) => item.done).length
  return `${counts} | moves ${moves} (clean ${clean}, unclean ${unclean}) | done ${done}/${items.length}`
}
