import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryBackend } from '@worklease/memory'
import { describe, expect, test } from 'vitest'
import type { CounterStore } from '../src/counter-store.js'
import type { Op } from '../src/history.js'
import { checkPool } from '../src/pool-checks.js'
import type { PoolLine } from '../src/pool-workload.js'
import { Random } from '../src/random.js'
import { checkRunner } from '../src/runner-checks.js'
import { loadRunnerLog, type RunnerLine, RunnerLog, runnerWorker } from '../src/runner-workload.js'
import { op } from './ops.js'

/**
 * Found by a review (session 49): what the runner's and the pool's checks accepted of what
 * `lease.held` answers, and of what the pool reports. Each bad history here passed before.
 */

const W = 'pool/u/u-0'
const belief = (t: number, held: boolean, ttl = 400, margin = 40): RunnerLine => ({
  e: 'b',
  h: 'A',
  w: 'w',
  tok: '1',
  t,
  held,
  ttl,
  margin,
  off: 0,
})
const step = (t: number, held: boolean, ttl = 400, margin = 40): PoolLine => ({
  e: 'step',
  h: 'A',
  w: W,
  tok: '1',
  t,
  held,
  margin,
  ttl,
  off: 0,
})
const readLine = (h: string, tok: string, t: number, read: string | null, clean: boolean): PoolLine => ({
  e: 'read',
  h,
  w: W,
  tok,
  t,
  read,
  clean,
})
/** A takes the unit under token 1 and reads nothing. */
const takenByA = (ttl: number): Op[] => [
  op('acquire', { workId: W, holder: 'A', token: 1, invoke: 0, complete: 2, ttl }),
  op('readCheckpoint', { workId: W, holder: 'A', token: 1, invoke: 3, complete: 4, read: null, clean: true }),
]
/** The same, and A checkpoints A#1.0 (acknowledged at 12). */
const givenToA = (ttl: number): Op[] => [
  ...takenByA(ttl),
  op('checkpoint', { workId: W, holder: 'A', token: 1, value: 'A#1.0', invoke: 10, complete: 12, ttl }),
]
const runnerChecks = (lines: RunnerLine[], ops: Op[]) =>
  checkRunner(lines, ops).violations.map((v) => v.check)
const poolChecks = (lines: PoolLine[], ops: Op[]) => checkPool(lines, ops).violations.map((v) => v.check)

describe('a yes once its own release was sent, whatever the reply: release() ends the lease first', () => {
  const releases: Array<[string, Partial<Parameters<typeof op>[1]>]> = [
    ['its reply lost', { outcome: 'info' }],
    ['answered FENCED late', { complete: 300, outcome: 'fail', code: 'FENCED' }],
    ['acknowledged late', { complete: 300 }],
  ]
  for (const [name, outcome] of releases) {
    test(`runner: ${name}`, () => {
      const ops = [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 2, ttl: 400 }),
        op('release', { holder: 'A', token: 1, invoke: 30, ...outcome }),
      ]
      expect(runnerChecks([belief(60, true)], ops)).toEqual(['held-after-takeover'])
      expect(runnerChecks([belief(20, true)], ops)).toEqual([])
    })
  }

  test('pool: its reply lost', () => {
    const ops = [
      ...takenByA(400),
      op('release', { workId: W, holder: 'A', token: 1, invoke: 30, outcome: 'info' }),
    ]
    expect(poolChecks([readLine('A', '1', 3, null, true), step(60, true)], ops)).toEqual(['pool-overlap'])
    expect(poolChecks([readLine('A', '1', 3, null, true), step(20, true)], ops)).toEqual([])
  })
})

describe('a yes after a no: a lease that ended never comes back', () => {
  test('runner, with nothing in the store between', () => {
    const ops = [op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 2, ttl: 100 })]
    expect(runnerChecks([belief(40, false, 100, 10), belief(50, true, 100, 10)], ops)).toEqual([
      'held-after-loss',
    ])
  })

  test('runner, with a checkpoint sent past the deadline reviving the expired record', () => {
    const ops = [
      op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 2, ttl: 100 }),
      op('checkpoint', { holder: 'A', token: 1, value: 'A#1.0', invoke: 120, complete: 122, ttl: 100 }),
    ]
    expect(runnerChecks([belief(95, false, 100, 10), belief(130, true, 100, 10)], ops)).toEqual([
      'held-after-loss',
    ])
  })

  test('pool', () => {
    const ops = [op('acquire', { workId: W, holder: 'A', token: 1, invoke: 0, complete: 2, ttl: 400 })]
    const lines = [readLine('A', '1', 3, null, true), step(20, false), step(40, true)]
    expect(poolChecks(lines, ops)).toContain('held-after-loss')
  })
})

describe('only a LEASE_HELD naming the holder and its token moves its deadline: the Leaser adopts no other', () => {
  // A holds token 1 (deadline 90). B's acquire at 500 lost its reply (token 2). A's own acquire at
  // 900 is refused naming B's token 2; A's lease.held says yes at 1,000.
  const ops = (workId = 'w') => [
    op('acquire', { workId, holder: 'A', token: 1, invoke: 0, complete: 2, ttl: 100 }),
    op('acquire', { workId, holder: 'B', invoke: 500, outcome: 'info', ttl: 100 }),
    op('acquire', {
      workId,
      holder: 'A',
      invoke: 900,
      complete: 901,
      ttl: 100,
      outcome: 'fail',
      code: 'LEASE_HELD',
      heldBy: { token: 2n, holder: 'B', expiresInMs: 80 },
    }),
  ]

  test('runner', () => {
    expect(runnerChecks([belief(1_000, true, 100, 10)], ops())).toEqual(['held-after-takeover'])
  })

  test('pool', () => {
    const lines = [readLine('A', '1', 3, null, true), step(1_000, true, 100, 10)]
    expect(poolChecks(lines, ops(W))).toContain('pool-overlap')
  })
})

test('pool-misread: a handler given what no read of the store returned', () => {
  const ops = [
    ...takenByA(400),
    // A crashes. B takes token 2 after A's ttl; its readCheckpoint's reply is lost.
    op('acquire', { workId: W, holder: 'B', token: 2, invoke: 500, complete: 502, ttl: 400 }),
    op('readCheckpoint', { workId: W, holder: 'B', token: 2, invoke: 503, outcome: 'info' }),
  ]
  const lines = [readLine('A', '1', 3, null, true), readLine('B', '2', 503, null, true)]
  expect(poolChecks(lines, ops)).toEqual(['pool-misread'])
})

describe('pool-released-but-lost: the store must show a release that may have landed', () => {
  const history = (release: Op[]): Op[] => [
    ...givenToA(400),
    ...release,
    // C's acquire lost its reply after A's lease expired: token 2, which nobody used.
    op('acquire', { workId: W, holder: 'C', invoke: 500, outcome: 'info', ttl: 400 }),
    op('acquire', {
      workId: W,
      holder: 'D',
      token: 3,
      invoke: 1_000,
      complete: 1_002,
      ttl: 400,
      read: 'A#1.0',
      clean: false,
    }),
  ]
  const lines: PoolLine[] = [
    readLine('A', '1', 3, null, true),
    step(9, true),
    { e: 'return', h: 'A', w: W, tok: '1', t: 20, held: true, stopped: true, margin: 40, ttl: 400, off: 0 },
    { e: 'handoff', h: 'A', w: W, tok: '1', t: 521, confirmed: true, margin: 40 },
    readLine('D', '3', 1_000, 'A#1.0', false),
  ]

  test('its only release refused FENCED', () => {
    const fenced = op('release', {
      workId: W,
      holder: 'A',
      token: 1,
      invoke: 30,
      complete: 520,
      outcome: 'fail',
      code: 'FENCED',
    })
    expect(poolChecks(lines, history([fenced]))).toEqual(['pool-released-but-lost'])
  })

  test('no release sent at all', () => {
    expect(poolChecks(lines, history([]))).toEqual(['pool-released-but-lost'])
  })

  test('legal: a release whose reply was lost may have landed', () => {
    const lost = op('release', { workId: W, holder: 'A', token: 1, invoke: 30, outcome: 'info' })
    expect(poolChecks(lines, history([lost]))).toEqual([])
  })
})

test('legal: a handoff spoiled by a successor whose clock ran ahead beyond the margin is counted apart', () => {
  const ahead = { offsetAtInvoke: 3_000, offsetAtComplete: 3_000 }
  const ops = [
    ...givenToA(2_000),
    // The release's first attempt lost its reply (it never landed); C, 3 s ahead, takes token 2;
    // the retry is FENCED, and with no list to tell, release() counts it released.
    op('release', { workId: W, holder: 'A', token: 1, invoke: 60, outcome: 'info' }),
    op('acquire', {
      workId: W,
      holder: 'C',
      token: 2,
      invoke: 100,
      complete: 102,
      ttl: 2_000,
      read: 'A#1.0',
      clean: false,
      ...ahead,
    }),
    op('release', {
      workId: W,
      holder: 'A',
      token: 1,
      invoke: 150,
      complete: 152,
      outcome: 'fail',
      code: 'FENCED',
    }),
  ]
  const lines: PoolLine[] = [
    readLine('A', '1', 3, null, true),
    {
      e: 'return',
      h: 'A',
      w: W,
      tok: '1',
      t: 50,
      held: true,
      stopped: true,
      margin: 900,
      ttl: 2_000,
      off: 0,
    },
    { e: 'handoff', h: 'A', w: W, tok: '1', t: 160, confirmed: true, margin: 900 },
    readLine('C', '2', 100, 'A#1.0', false),
  ]
  const { violations, summary } = checkPool(lines, ops)
  expect(violations.map((v) => v.check)).toEqual([])
  expect(summary.overlapsBeyondMargin).toBe(1)
  // Within the margin it stays a violation.
  const near = ops.map((o) => (o.holder === 'C' ? { ...o, offsetAtInvoke: 500, offsetAtComplete: 500 } : o))
  expect(poolChecks(lines, near)).toContain('pool-unclean-handoff')
  // Found by the review of that change: the abandoned first attempt's late reply recorded FENCED, not
  // lost, leaves no release that may have landed; the same skew excuses it.
  const lateFenced = ops.map((o) =>
    o.op === 'release' && o.invoke === 60
      ? { ...o, outcome: 'fail' as const, code: 'FENCED', complete: 200 }
      : o,
  )
  const late = checkPool(lines, lateFenced)
  expect(late.violations.map((v) => v.check)).toEqual([])
  expect(late.summary.overlapsBeyondMargin).toBe(1)
  const lateNear = lateFenced.map((o) =>
    o.holder === 'C' ? { ...o, offsetAtInvoke: 500, offsetAtComplete: 500 } : o,
  )
  expect(poolChecks(lines, lateNear)).toEqual(['pool-released-but-lost'])
})

test('a job whose claim the fence refused still asks lease.held once more as it returns', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'worklease-final-belief-'))
  try {
    const log = new RunnerLog(dir, 'p0.0')
    // A downstream counter that a newer token has always claimed.
    const store = { claim: () => null, fencedWrite: () => false } as unknown as CounterStore
    let runs = 0
    await runnerWorker({
      backend: new MemoryBackend(),
      holderId: 'A',
      lease: { ttlMs: 400, safetyMarginMs: 40 },
      workIds: ['job-0'],
      counterFor: () => 'c',
      progressName: 'p',
      store,
      log,
      random: new Random(1),
      offset: () => 0,
      stopped: () => runs++ >= 3,
    })
    log.close()
    const lines = loadRunnerLog(dir)
    const ok = lines.filter((line) => line.e === 'r' && line.outcome === 'ok').length
    expect(ok).toBeGreaterThan(0)
    expect(lines.filter((line) => line.e === 'b')).toHaveLength(ok)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
