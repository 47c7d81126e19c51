import { describe, expect, test } from 'vitest'
import { initialPoolState } from '../src/initial-pool-state.js'
import { type PoolAction, type PoolState, reducePool } from '../src/reduce-pool.js'

const run = (actions: PoolAction[], state = initialPoolState(['a', 'b'], 3)) => {
  const lines: string[] = []
  for (const action of actions) {
    const next = reducePool(state, action)
    state = next.state
    lines.push(...next.lines.map((line) => line.text))
  }
  return { state, lines }
}

const report = (worker: string, event: Extract<PoolAction, { type: 'report' }>['event']): PoolAction => ({
  type: 'report',
  worker,
  event,
})

describe('reducePool', () => {
  test('a consent handoff: the item moves, counted clean, and the giver no longer holds it', () => {
    const { state, lines } = run([
      { type: 'spawned', worker: 'w1' },
      { type: 'spawned', worker: 'w2', role: 'joined' },
      report('w1', { type: 'taken', item: 'a', token: 1n, cleanHandoff: true, stepsDone: 0, at: 10 }),
      report('w1', { type: 'checkpointed', item: 'a', token: 1n, step: 1 }),
      report('w1', { type: 'givingUp', item: 'a' }),
      report('w1', { type: 'ended', item: 'a', token: 1n, how: 'consent', stepsDone: 1, at: 20 }),
      report('w1', { type: 'released', item: 'a' }),
      report('w2', { type: 'taken', item: 'a', token: 2n, cleanHandoff: true, stepsDone: 1, at: 30 }),
    ])
    expect(state.workers.w1!.items).toEqual([])
    expect(state.workers.w2!.items).toEqual(['a'])
    expect(state.items.a).toMatchObject({
      holder: 'w2',
      token: 2n,
      moves: 1,
      clean: 1,
      unclean: 0,
      stepsDone: 1,
    })
    expect(state.runs.map((r) => [r.worker, r.token, r.checkpointed, r.end?.how])).toEqual([
      ['w1', 1n, 1, 'consent'],
      ['w2', 2n, 1, undefined],
    ])
    expect(state.checkpointed).toBe(1)
    expect(lines).toContain('w2 took a token 2 (clean handoff, resumes after step 1/3)')
  })

  test('SIGKILL ends the worker’s runs at the kill and frees its items; the takeover counts unclean', () => {
    const { state, lines } = run([
      { type: 'spawned', worker: 'w1' },
      report('w1', { type: 'taken', item: 'a', token: 1n, cleanHandoff: true, stepsDone: 0, at: 10 }),
      report('w1', { type: 'taken', item: 'b', token: 1n, cleanHandoff: true, stepsDone: 0, at: 11 }),
      { type: 'signalled', worker: 'w1', signal: 'SIGKILL', at: 50 },
      { type: 'exited', worker: 'w1', code: null, signal: 'SIGKILL', expected: false },
      { type: 'spawned', worker: 'w2' },
      report('w2', { type: 'taken', item: 'a', token: 2n, cleanHandoff: false, stepsDone: 0, at: 99 }),
    ])
    expect(state.workers.w1).toMatchObject({ status: 'killed', role: 'killed', items: [] })
    expect(state.items.b!.holder).toBeUndefined()
    expect(state.items.a).toMatchObject({ holder: 'w2', unclean: 1, moves: 1 })
    expect(state.runs.filter((r) => r.worker === 'w1').map((r) => r.end)).toEqual([
      { at: 50, how: 'killed' },
      { at: 50, how: 'killed' },
    ])
    // A killed worker's exit is expected: not a failure.
    expect(state.failures).toEqual([])
    expect(lines[lines.length - 1]).toBe('w2 took a token 2 (UNCLEAN handoff, resumes after step 0/3)')
    expect(lines.some((line) => line.startsWith('SIGKILL w1 holding 2 items'))).toBe(true)
  })

  test('a repeated take of the same token (the handler retried) is one run; an unexpected exit is a failure', () => {
    const taken = report('w1', {
      type: 'taken',
      item: 'a',
      token: 1n,
      cleanHandoff: true,
      stepsDone: 0,
      at: 10,
    })
    const { state } = run([
      { type: 'spawned', worker: 'w1' },
      taken,
      taken,
      { type: 'exited', worker: 'w1', code: 1, signal: null, expected: false, stderr: 'boom' },
    ])
    expect(state.runs).toHaveLength(1)
    expect(state.workers.w1!.taken).toBe(1)
    expect(state.workers.w1!.status).toBe('failed')
    expect(state.failures).toEqual(['w1 exited unexpectedly (code 1):\nboom'])
  })

  test('a worker force-killed at the finish is one failure, recorded before its exit arrives', () => {
    const { state } = run([
      { type: 'spawned', worker: 'w1' },
      { type: 'forceKilled', worker: 'w1', graceMs: 6_500 },
      { type: 'exited', worker: 'w1', code: null, signal: 'SIGKILL', expected: true },
    ])
    expect(state.workers.w1!.status).toBe('failed')
    expect(state.failures).toEqual(['w1 did not exit within 6500 ms of being told to finish: SIGKILLed'])
  })

  test('does not change the state it was given', () => {
    const before: PoolState = initialPoolState(['a'], 3)
    const frozen = JSON.stringify(before, (_k, v) => (typeof v === 'bigint' ? String(v) : v))
    run(
      [
        { type: 'spawned', worker: 'w1' },
        report('w1', { type: 'taken', item: 'a', token: 1n, cleanHandoff: true, stepsDone: 0, at: 1 }),
      ],
      before,
    )
    expect(JSON.stringify(before, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).toBe(frozen)
  })
})
