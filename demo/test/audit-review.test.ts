// Found by a review (session 49): the audits on hand-made runs, bad ones each must fail and good ones
// that raced a strike, which must pass.
import { describe, expect, test } from 'vitest'
import { audit, type Check, type FinalItem } from '../src/audit.js'
import { auditPool } from '../src/audit-pool.js'
import type { RunOutcome } from '../src/coordinator.js'
import { type HistoryEntry, parseHistory } from '../src/downstream.js'
import { initialPoolState } from '../src/initial-pool-state.js'
import type { PoolChange } from '../src/pool-coordinator.js'
import { type PoolAction, type PoolState, reducePool } from '../src/reduce-pool.js'
import type { PlannedStrike, Strike } from '../src/reduce-run.js'

const verdict = (checks: Check[], name: string) => checks.find((c) => c.name === name)!.pass

/** A history string in the downstream's own format. */
const h = (text: string): HistoryEntry[] => parseHistory(text)

/** Steps 1..n written by one token, in the downstream format. */
const writes = (from: number, to: number, token: number, worker: string) =>
  Array.from({ length: to - from + 1 }, (_, i) => `w ${from + i} ${token} ${worker};`).join('')

const STEPS = 6

function baseStrikes(overrides: Partial<Record<'crash' | 'pause' | 'stop', Partial<Strike>>> = {}) {
  const crash: Strike = {
    action: 'crash',
    worker: 'w1',
    item: 'item-01',
    token: 1n,
    step: 3,
    at: 100,
    lateWrites: [],
    handoff: { worker: 'w2', token: 2n, cleanHandoff: false, stepsDone: 2 },
    ...overrides.crash,
  }
  const pause: Strike = {
    action: 'pause',
    worker: 'w3',
    item: 'item-02',
    token: 1n,
    step: 2,
    at: 200,
    lateWrites: [{ step: 2, accepted: false }],
    resumedAt: 2000,
    claimedBy: { worker: 'w4', token: 2n },
    handoff: { worker: 'w4', token: 2n, cleanHandoff: false, stepsDone: 1 },
    ...overrides.pause,
  }
  const stop: Strike = {
    action: 'stop',
    worker: 'w4',
    item: 'item-03',
    token: 1n,
    step: 4,
    at: 300,
    lateWrites: [],
    handoff: { worker: 'w5', token: 2n, cleanHandoff: true, stepsDone: 4 },
    ...overrides.stop,
  }
  const plan: PlannedStrike[] = [
    { action: 'crash', atProgress: 0.1, target: crash.worker, strike: crash },
    { action: 'pause', atProgress: 0.3, target: pause.worker, strike: pause },
    { action: 'stop', atProgress: 0.5, target: stop.worker, strike: stop },
  ]
  return plan
}

const outcome = (plan: PlannedStrike[]): RunOutcome => ({
  workers: [],
  items: [],
  plan,
  failures: [],
  timedOut: false,
  elapsedMs: 5000,
})
const finals = (items: string[]): FinalItem[] => items.map((item) => ({ item, stepsDone: STEPS, token: 3n }))

/** A good run's downstream: crash (w1 token 1 killed in step 3), pause (w3 token 1 paused in step 2), stop. */
function goodHistories(): Map<string, HistoryEntry[]> {
  return new Map([
    ['item-01', h(`c 1 w1;${writes(1, 2, 1, 'w1')}c 2 w2;${writes(3, 6, 2, 'w2')}`)],
    ['item-02', h(`c 1 w3;${writes(1, 1, 1, 'w3')}c 2 w4;${writes(2, 6, 2, 'w4')}`)],
    ['item-03', h(`c 1 w4;${writes(1, 4, 1, 'w4')}c 2 w5;${writes(5, 6, 2, 'w5')}`)],
  ])
}

describe('audit() (plain demo)', () => {
  test('baseline: the hand-made good run passes every check', () => {
    const checks = audit({
      steps: STEPS,
      outcome: outcome(baseStrikes()),
      final: finals(['item-01', 'item-02', 'item-03']),
      histories: goodHistories(),
    })
    expect(checks.every((c) => c.pass)).toBe(true)
  })

  test('the crash check fails when the successor resumed after a later step than the kill', () => {
    // w1 killed in step 3 (last checkpoint: step 2); successor claims to resume after step 5.
    const plan = baseStrikes({
      crash: { handoff: { worker: 'w2', token: 2n, cleanHandoff: false, stepsDone: 5 } },
    })
    const checks = audit({
      steps: STEPS,
      outcome: outcome(plan),
      final: finals(['item-01', 'item-02', 'item-03']),
      histories: goodHistories(),
    })
    expect(verdict(checks, 'crash followed by an unclean handoff')).toBe(false)
  })

  test('a step the killed worker wrote but had not checkpointed, redone by its successor, passes', () => {
    // w1 (token 1, killed in step 3) wrote step 3 but had not checkpointed it; w2 read checkpoint 2,
    // claimed token 2 after that write landed (the fence could not refuse it), and redid step 3.
    const histories = goodHistories()
    histories.set('item-01', h(`c 1 w1;${writes(1, 3, 1, 'w1')}c 2 w2;${writes(3, 6, 2, 'w2')}`))
    const checks = audit({
      steps: STEPS,
      outcome: outcome(baseStrikes()),
      final: finals(['item-01', 'item-02', 'item-03']),
      histories,
    })
    expect(verdict(checks, 'no step accepted from a stale token')).toBe(true)
    expect(verdict(checks, 'every step result written exactly once')).toBe(true)
    // By a token that was not killed, the same second write is a duplicate.
    histories.set('item-02', h(`c 1 w3;${writes(1, 2, 1, 'w3')}c 2 w4;${writes(2, 6, 2, 'w4')}`))
    const twice = audit({
      steps: STEPS,
      outcome: outcome(baseStrikes()),
      final: finals(['item-01', 'item-02', 'item-03']),
      histories,
    })
    expect(verdict(twice, 'every step result written exactly once')).toBe(false)
  })
})

// ---------------------------------------------------------------------------------------------------
// Pool audit

type Event = Extract<PoolAction, { type: 'report' }>['event']

function poolRun(items: string[], steps: number) {
  let state = initialPoolState(items, steps)
  const step = (action: PoolAction) => {
    state = reducePool(state, action).state
  }
  const report = (worker: string, event: Event) => step({ type: 'report', worker, event })
  const ckpt = (worker: string, item: string, token: bigint, from: number, to: number) => {
    for (let s = from; s <= to; s++) report(worker, { type: 'checkpointed', item, token, step: s })
  }
  return { step, report, ckpt, state: () => state as PoolState }
}

const poolChanges = (): PoolChange[] => [
  { action: 'join', atProgress: 0.15, workers: ['w4'], at: 100 },
  { action: 'leave', atProgress: 0.35, workers: ['w2'], at: 200 },
  { action: 'crash', atProgress: 0.55, workers: ['w1'], at: 300 },
]

const S = 4

/** w1 holds 'a' (token 1, checkpointed steps 1 and 2) and gives it up; w2 waits to take it. */
function givingUpBeforeKill() {
  const run = poolRun(['a'], S)
  run.step({ type: 'spawned', worker: 'w1' })
  run.step({ type: 'spawned', worker: 'w2' })
  run.report('w1', { type: 'taken', item: 'a', token: 1n, cleanHandoff: true, stepsDone: 0, at: 0 })
  run.ckpt('w1', 'a', 1n, 1, 2)
  run.report('w1', { type: 'givingUp', item: 'a' })
  return run
}

/** The pool audit of such a run: w1 wrote steps 1 and 2, w2 the rest. */
function auditOfA(run: ReturnType<typeof poolRun>) {
  return auditPool({
    steps: S,
    outcome: { state: run.state(), changes: poolChanges(), timedOut: false, elapsedMs: 3000 },
    final: [{ item: 'a', stepsDone: S, token: 3n }],
    histories: new Map([['a', h(`c 1 w1;${writes(1, 2, 1, 'w1')}c 2 w2;${writes(3, S, 2, 'w2')}`)]]),
  })
}

describe('auditPool()', () => {
  test('a leaver that hands nothing over by consent (its item expires, unclean) fails the consent check', () => {
    const run = poolRun(['a', 'b', 'c'], S)
    for (const w of ['w1', 'w2', 'w3']) run.step({ type: 'spawned', worker: w })
    run.step({ type: 'spawned', worker: 'w4', role: 'joined' })
    for (const w of ['w1', 'w2', 'w3', 'w4']) run.report(w, { type: 'ready', holderId: w, pid: 1 })
    run.report('w1', { type: 'taken', item: 'a', token: 1n, cleanHandoff: true, stepsDone: 0, at: 0 })
    run.report('w1', { type: 'taken', item: 'b', token: 1n, cleanHandoff: true, stepsDone: 0, at: 0 })
    run.report('w2', { type: 'taken', item: 'c', token: 1n, cleanHandoff: true, stepsDone: 0, at: 0 })
    // Join: w1 gives 'a' to w4 by consent (a proper clean handoff).
    run.ckpt('w1', 'a', 1n, 1, 1)
    run.report('w1', { type: 'givingUp', item: 'a' })
    run.report('w1', { type: 'ended', item: 'a', token: 1n, how: 'consent', stepsDone: 1, at: 10 })
    run.report('w1', { type: 'released', item: 'a' })
    run.report('w4', { type: 'taken', item: 'a', token: 2n, cleanHandoff: true, stepsDone: 1, at: 11 })
    // Leave: SIGTERM w2. BAD: w2's pool does not give 'c' back by consent; the process just exits 0
    // (no 'ended', no 'released'); 'c' is taken after the ttl with cleanHandoff false.
    run.ckpt('w2', 'c', 1n, 1, 2)
    run.step({ type: 'signalled', worker: 'w2', signal: 'SIGTERM', at: 20 })
    run.step({ type: 'exited', worker: 'w2', code: 0, signal: null, expected: false })
    run.report('w3', { type: 'taken', item: 'c', token: 2n, cleanHandoff: false, stepsDone: 2, at: 2000 })
    // Crash: SIGKILL w1 (holding b); w3 takes it after the ttl.
    run.ckpt('w1', 'b', 1n, 1, 2)
    run.step({ type: 'signalled', worker: 'w1', signal: 'SIGKILL', at: 30 })
    run.report('w3', { type: 'taken', item: 'b', token: 2n, cleanHandoff: false, stepsDone: 2, at: 2100 })
    // Everyone finishes.
    run.ckpt('w4', 'a', 2n, 2, S)
    run.report('w4', { type: 'ended', item: 'a', token: 2n, how: 'done', stepsDone: S, at: 3000 })
    run.ckpt('w3', 'c', 2n, 3, S)
    run.report('w3', { type: 'ended', item: 'c', token: 2n, how: 'done', stepsDone: S, at: 3000 })
    run.ckpt('w3', 'b', 2n, 3, S)
    run.report('w3', { type: 'ended', item: 'b', token: 2n, how: 'done', stepsDone: S, at: 3000 })
    const histories = new Map([
      ['a', h(`c 1 w1;${writes(1, 1, 1, 'w1')}c 2 w4;${writes(2, S, 2, 'w4')}`)],
      ['b', h(`c 1 w1;${writes(1, 2, 1, 'w1')}c 2 w3;${writes(3, S, 2, 'w3')}`)],
      ['c', h(`c 1 w2;${writes(1, 2, 1, 'w2')}c 2 w3;${writes(3, S, 2, 'w3')}`)],
    ])
    const final = ['a', 'b', 'c'].map((item) => ({ item, stepsDone: S, token: 3n }))
    const checks = auditPool({
      steps: S,
      outcome: { state: run.state(), changes: poolChanges(), timedOut: false, elapsedMs: 4000 },
      final,
      histories,
    })
    expect(verdict(checks, 'every consent handoff clean')).toBe(false)
    expect(checks.find((c) => c.name === 'every consent handoff clean')!.detail).toContain(
      'w2 left 1 items without releasing them: c (no end reported)',
    )
  })

  test('a leaver that exits with code 1 is a failure, not a clean leave', () => {
    const run = poolRun(['a'], 2)
    run.step({ type: 'spawned', worker: 'w2' })
    run.step({ type: 'signalled', worker: 'w2', signal: 'SIGTERM', at: 1 })
    run.step({ type: 'exited', worker: 'w2', code: 1, signal: null, expected: false })
    expect(run.state().workers.w2!.status).toBe('failed')
    expect(run.state().failures).toEqual(['w2 did not leave cleanly (code 1)'])
  })

  test('a consent give-up and release reported after the SIGKILL that came later: a consent handoff', () => {
    const run = givingUpBeforeKill()
    // w1's handler ends and the pool releases: all done in w1 ...
    // ... but the coordinator's SIGKILL is dispatched before the 'ended'/'released' reports arrive.
    run.step({ type: 'signalled', worker: 'w1', signal: 'SIGKILL', at: 50 })
    run.report('w1', { type: 'ended', item: 'a', token: 1n, how: 'consent', stepsDone: 2, at: 49 })
    run.report('w1', { type: 'released', item: 'a' })
    // w2 takes 'a' right away: a clean handoff (it was released).
    run.report('w2', { type: 'taken', item: 'a', token: 2n, cleanHandoff: true, stepsDone: 2, at: 51 })
    run.ckpt('w2', 'a', 2n, 3, S)
    run.report('w2', { type: 'ended', item: 'a', token: 2n, how: 'done', stepsDone: S, at: 900 })
    const checks = auditOfA(run)
    expect(run.state().runs.find((r) => r.worker === 'w1')!.end?.how).toBe('consent')
    expect(checks.find((c) => c.name === 'every consent handoff clean')!.detail).toMatch(
      /^1\/1 items given up/,
    )
  })

  test('killed between giving an item up and reporting its release: either handoff is right', () => {
    const run = givingUpBeforeKill()
    run.report('w1', { type: 'ended', item: 'a', token: 1n, how: 'consent', stepsDone: 2, at: 49 })
    // SIGKILL before the pool's release commits: the lease expires, the successor's handoff is unclean.
    run.step({ type: 'signalled', worker: 'w1', signal: 'SIGKILL', at: 50 })
    run.report('w2', { type: 'taken', item: 'a', token: 2n, cleanHandoff: false, stepsDone: 2, at: 2000 })
    run.ckpt('w2', 'a', 2n, 3, S)
    run.report('w2', { type: 'ended', item: 'a', token: 2n, how: 'done', stepsDone: S, at: 3000 })
    const checks = auditOfA(run)
    const consent = checks.find((c) => c.name === 'every consent handoff clean')!.detail
    expect(consent).toMatch(/^0\/0 items given up/)
    expect(consent).toContain('1 given up by a worker killed before its release was reported')
  })
})
