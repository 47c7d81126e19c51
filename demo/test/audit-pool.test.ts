import { describe, expect, test } from 'vitest'
import { auditPool } from '../src/audit-pool.js'
import { initialPoolState } from '../src/initial-pool-state.js'
import { type PoolAction, type PoolState, reducePool } from '../src/reduce-pool.js'

type Event = Extract<PoolAction, { type: 'report' }>['event']

const joinedCheck = (state: PoolState) =>
  auditPool({
    steps: 2,
    outcome: { state, changes: [], timedOut: false, elapsedMs: 1 },
    final: [],
    histories: new Map(),
  }).find((check) => check.name === 'joining workers took items by consent')!

/** w1 takes both items; w2 joins. */
const started = () => {
  let state = initialPoolState(['a', 'b'], 2)
  const step = (action: PoolAction) => {
    state = reducePool(state, action).state
    return step
  }
  const report = (worker: string, event: Event) => step({ type: 'report', worker, event })
  step({ type: 'spawned', worker: 'w1' })({ type: 'spawned', worker: 'w2', role: 'joined' })
  report('w1', { type: 'taken', item: 'a', token: 1n, cleanHandoff: true, stepsDone: 0, at: 0 })
  report('w1', { type: 'taken', item: 'b', token: 1n, cleanHandoff: true, stepsDone: 0, at: 0 })
  return { step, report, state: () => state }
}

describe('pool audit: joining workers took items by consent', () => {
  test('a joiner whose only take was an unclean takeover after a crash fails the check', () => {
    const run = started()
    run.step({ type: 'signalled', worker: 'w1', signal: 'SIGKILL', at: 10 })
    run.report('w2', { type: 'taken', item: 'b', token: 2n, cleanHandoff: false, stepsDone: 0, at: 20 })
    const joined = joinedCheck(run.state())
    expect(joined.pass).toBe(false)
    expect(joined.detail).toBe('w2 took 0 by consent (1 in all)')
  })

  test('a joiner that took an item given up by consent passes', () => {
    const run = started()
    run.report('w1', { type: 'givingUp', item: 'a' })
    run.report('w1', { type: 'ended', item: 'a', token: 1n, how: 'consent', stepsDone: 0, at: 5 })
    run.report('w1', { type: 'released', item: 'a' })
    run.report('w2', { type: 'taken', item: 'a', token: 2n, cleanHandoff: true, stepsDone: 0, at: 6 })
    const joined = joinedCheck(run.state())
    expect(joined.pass).toBe(true)
    expect(joined.detail).toBe('w2 took 1 by consent (1 in all)')
  })

  test('a joiner whose only take was a fresh item (nobody gave it up) fails the check', () => {
    let state = initialPoolState(['a'], 2)
    state = reducePool(state, { type: 'spawned', worker: 'w2', role: 'joined' }).state
    state = reducePool(state, {
      type: 'report',
      worker: 'w2',
      event: { type: 'taken', item: 'a', token: 1n, cleanHandoff: true, stepsDone: 0, at: 0 },
    }).state
    expect(joinedCheck(state).pass).toBe(false)
  })
})
