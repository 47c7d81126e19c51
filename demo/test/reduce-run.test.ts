import { describe, expect, test } from 'vitest'
import type { WorkerEvent } from '../src/protocol.js'
import {
  armStrikes,
  initialRunState,
  type PlannedStrike,
  type RunAction,
  type RunEffect,
  type RunState,
  readyToFinish,
  reduceRun,
} from '../src/reduce-run.js'

const fresh = (plan: PlannedStrike[] = []) =>
  initialRunState({ items: ['a', 'b'], steps: 4, stepMs: 100, ttlMs: 1_000, simulated: false, plan })

const run = (actions: RunAction[], state: RunState = fresh()) => {
  const lines: string[] = []
  const effects: RunEffect[] = []
  for (const action of actions) {
    const next = reduceRun(state, action)
    state = next.state
    lines.push(...next.lines.map((line) => line.text))
    effects.push(...next.effects)
  }
  return { state, lines, effects }
}

const report = (worker: string, event: WorkerEvent, at = 0, ageMs = 0): RunAction => ({
  type: 'report',
  worker,
  event,
  at,
  ageMs,
})

/** w1 holds item a, and the one planned strike is armed against it. */
const armedAgainstW1 = (action: PlannedStrike['action']) =>
  armStrikes(
    run(
      [
        { type: 'spawned', worker: 'w1' },
        report('w1', { type: 'acquired', item: 'a', token: 1n, cleanHandoff: true, stepsDone: 0 }),
      ],
      fresh([{ action, atProgress: 0 }]),
    ).state,
    (names) => names[0]!,
  )

const json = (value: unknown) => JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? String(v) : v))

describe('reduceRun', () => {
  test('a takeover after a crash: the item changes hands, counted unclean, and the strike records it', () => {
    const armed = armedAgainstW1('crash')
    expect(armed.plan[0]!.target).toBe('w1')
    const { state, lines, effects } = run(
      [
        report('w1', { type: 'step', item: 'a', token: 1n, step: 2, sentAt: 0 }, 500),
        { type: 'spawned', worker: 'w2', replaces: 'w1' },
        { type: 'exited', worker: 'w1', code: null, signal: 'SIGKILL' },
        report('w2', { type: 'acquired', item: 'a', token: 2n, cleanHandoff: false, stepsDone: 1 }),
      ],
      armed,
    )
    expect(effects).toEqual([
      { type: 'strike', worker: 'w1', action: 'crash' },
      { type: 'replace', worker: 'w1' },
    ])
    expect(state.workers.w1).toMatchObject({ status: 'killed', role: 'crash' })
    expect(state.items.a).toMatchObject({ holder: 'w2', token: 2n, handoffs: 1, unclean: 1, stepsDone: 1 })
    expect(state.plan[0]!.strike).toMatchObject({
      worker: 'w1',
      item: 'a',
      token: 1n,
      step: 2,
      at: 500,
      handoff: { worker: 'w2', token: 2n, cleanHandoff: false, stepsDone: 1 },
    })
    // A killed worker's exit is what the coordinator did: not a failure.
    expect(state.failures).toEqual([])
    expect(lines).toContain('SIGKILL w1 holding a token 1 in step 2: its lease is left to expire')
    expect(lines).toContain('w2 acquired a token 2 (UNCLEAN handoff, 1/4 steps done)')
  })

  test('a strike waits for a report that arrived early in its step, and a stop never in the last step', () => {
    const start = armedAgainstW1('stop')
    const late = run([report('w1', { type: 'step', item: 'a', token: 1n, step: 1, sentAt: 0 }, 0, 26)], start)
    expect(late.effects).toEqual([])
    expect(late.state.plan[0]!.strike).toBeUndefined()
    const last = run([report('w1', { type: 'step', item: 'a', token: 1n, step: 4, sentAt: 0 })], start)
    expect(last.effects).toEqual([])
    expect(last.state.plan[0]!.target).toBeUndefined()
    const stopped = run(
      [
        report('w1', { type: 'step', item: 'a', token: 1n, step: 2, sentAt: 0 }),
        { type: 'exited', worker: 'w1', code: 0, signal: null },
      ],
      start,
    )
    expect(stopped.state.workers.w1!.status).toBe('stopped')
    expect(stopped.effects).toEqual([
      { type: 'strike', worker: 'w1', action: 'stop' },
      { type: 'replace', worker: 'w1' },
    ])
  })

  test('a pause resumes after the ttl once a successor claimed the item, and its late writes are kept', () => {
    const paused = run(
      [
        { type: 'spawned', worker: 'w1' },
        { type: 'spawned', worker: 'w2' },
        report('w1', { type: 'acquired', item: 'a', token: 1n, cleanHandoff: true, stepsDone: 0 }),
      ],
      fresh([{ action: 'pause', atProgress: 0 }]),
    )
    const armed = armStrikes(paused.state, () => 'w1')
    const { state, lines, effects } = run(
      [
        report('w1', { type: 'step', item: 'a', token: 1n, step: 1, sentAt: 0 }, 100),
        { type: 'tick', at: 1_200 },
        report('w2', { type: 'acquired', item: 'a', token: 2n, cleanHandoff: false, stepsDone: 0 }),
        report('w2', { type: 'claimed', item: 'a', token: 2n, accepted: true }),
        { type: 'tick', at: 1_300 },
        { type: 'tick', at: 1_320 },
        report('w1', { type: 'wrote', item: 'a', token: 1n, step: 1, accepted: false }),
      ],
      armed,
    )
    expect(effects.filter((effect) => effect.type === 'resume')).toEqual([{ type: 'resume', worker: 'w1' }])
    expect(state.plan[0]!.strike).toMatchObject({
      resumedAt: 1_300,
      claimedBy: { worker: 'w2', token: 2n },
      lateWrites: [{ step: 1, accepted: false }],
    })
    expect(lines).toContain('w1 late write of a step 1 with token 1 REJECTED by the fence')
  })

  test('the run finishes when every item is done and the paused worker had 2 s for its late write', () => {
    const pause: PlannedStrike = {
      action: 'pause',
      atProgress: 0,
      target: 'w1',
      strike: {
        action: 'pause',
        worker: 'w1',
        item: 'a',
        token: 1n,
        step: 1,
        at: 0,
        resumedAt: 5_000,
        lateWrites: [],
      },
    }
    const { state, effects } = run(
      [
        { type: 'spawned', worker: 'w2' },
        report('w2', { type: 'done', item: 'a', token: 2n }),
        report('w2', { type: 'done', item: 'b', token: 1n }),
      ],
      fresh([pause]),
    )
    expect(effects).toEqual([
      { type: 'itemDone', item: 'a' },
      { type: 'itemDone', item: 'b' },
    ])
    expect(readyToFinish(state, 6_000)).toBe(false)
    expect(readyToFinish(state, 7_000)).toBe(true)
    const finishing = run([{ type: 'finishing', timedOut: false }], state).state
    expect(readyToFinish(finishing, 7_000)).toBe(false)
  })

  test('an unexpected exit is a failure and is replaced; a clean exit at the finish is not', () => {
    const { state, effects } = run([
      { type: 'spawned', worker: 'w1' },
      { type: 'spawned', worker: 'w2' },
      { type: 'exited', worker: 'w1', code: 1, signal: null, stderr: 'boom' },
      { type: 'finishing', timedOut: false },
      { type: 'exited', worker: 'w2', code: 0, signal: null },
    ])
    expect(state.workers.w1!.status).toBe('failed')
    expect(state.workers.w2!.status).toBe('exited')
    expect(state.failures).toEqual(['w1 exited unexpectedly (code 1):\nboom'])
    expect(effects).toEqual([{ type: 'replace', worker: 'w1' }])
  })

  test('a worker force-killed at the finish is one failure, recorded before its exit arrives', () => {
    const { state, lines } = run([
      { type: 'spawned', worker: 'w1' },
      { type: 'finishing', timedOut: false },
      { type: 'forceKilled', worker: 'w1', graceMs: 6_500 },
    ])
    expect(state.workers.w1!.status).toBe('failed')
    expect(state.failures).toEqual(['w1 did not exit within 6500 ms of being told to finish: SIGKILLed'])
    expect(lines).toContain('w1 did not exit within 6500 ms of being told to finish: SIGKILLed')
    const after = reduceRun(state, { type: 'exited', worker: 'w1', code: null, signal: 'SIGKILL' })
    expect(after.state.failures).toEqual(state.failures)
    expect(after.effects).toEqual([])
  })

  test('does not change the state it was given', () => {
    const before = fresh([{ action: 'crash', atProgress: 0 }])
    const frozen = json(before)
    const after = run(
      [
        { type: 'spawned', worker: 'w1' },
        report('w1', { type: 'acquired', item: 'a', token: 1n, cleanHandoff: true, stepsDone: 0 }),
        report('w1', { type: 'checkpointed', item: 'a', token: 1n, step: 1 }),
      ],
      before,
    ).state
    armStrikes(after, (names) => names[0]!)
    expect(json(before)).toBe(frozen)
    expect(after.checkpointed).toBe(1)
  })
})
