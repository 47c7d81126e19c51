import { describe, expect, test } from 'vitest'
import { checkHistory } from '../src/checker.js'
import type { Op } from '../src/history.js'
import { checkRunner } from '../src/runner-checks.js'
import type { RunnerLine } from '../src/runner-workload.js'
import { op } from './ops.js'

// A holds token 1 (ttl 100, margin 10): acquired at 0, renewed at 50. Its Leaser's deadline is then
// 50 + 100 - 10 = 140; the store lets the lease go no earlier than 150. B takes token 2 at 160.
// `renewedAgainAt`: A renews once more (acknowledged), moving its deadline to that + 90.
const history = (offsets: { a?: number; b?: number; renewedAgainAt?: number } = {}): Op[] => [
  op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 2, ttl: 100, offsetAtInvoke: offsets.a ?? 0 }),
  op('renew', { holder: 'A', token: 1, invoke: 50, complete: 52, ttl: 100, offsetAtInvoke: offsets.a ?? 0 }),
  ...(offsets.renewedAgainAt === undefined
    ? []
    : [
        op('renew', {
          holder: 'A',
          token: 1,
          invoke: offsets.renewedAgainAt,
          complete: offsets.renewedAgainAt + 2,
          ttl: 100,
          offsetAtInvoke: offsets.a ?? 0,
        }),
      ]),
  op('acquire', {
    holder: 'B',
    token: 2,
    invoke: 158,
    complete: 160,
    ttl: 100,
    offsetAtInvoke: offsets.b ?? 0,
  }),
]

const belief = (
  t: number,
  held = true,
  fields: Partial<Extract<RunnerLine, { e: 'b' }>> = {},
): RunnerLine => ({
  e: 'b',
  h: 'A',
  w: 'w',
  tok: '1',
  t,
  held,
  ttl: 100,
  margin: 10,
  off: 0,
  ...fields,
})

const run = (outcome: 'ok' | 'lost', t0: number, t1: number, refused = 0): RunnerLine => ({
  e: 'r',
  h: 'A',
  w: 'w',
  tok: '1',
  t0,
  t1,
  outcome,
  landed: 1,
  refused,
})

const checks = (lines: RunnerLine[], ops: Op[]) => checkRunner(lines, ops).violations.map((v) => v.check)

describe('runner checks', () => {
  test('held before the takeover, not held after it: fine', () => {
    expect(checks([belief(100), belief(139), belief(200, false)], history())).toEqual([])
  })

  test('held after a successor was acknowledged is caught', () => {
    const { violations } = checkRunner([belief(200)], history())
    expect(violations.map((v) => v.check)).toEqual(['held-after-takeover'])
    expect(violations[0]!.ops.map((o) => `${o.holder}:${o.op}`)).toEqual(['A:renew', 'B:acquire'])
  })

  test("a successor whose acquire lost its reply counts once the store acknowledged its holder's use of the token", () => {
    // B's acquire at 150 timed out but landed (token 2); B's Leaser found its lease and renewed it,
    // acknowledged at 172. A's Leaser still says held at 250: a broken deadline (found by review).
    const ops = [
      op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 2, ttl: 100 }),
      op('acquire', { holder: 'B', invoke: 150, outcome: 'info', ttl: 100 }),
      op('renew', { holder: 'B', token: 2, invoke: 170, complete: 172, ttl: 100 }),
    ]
    expect(checkHistory(ops)).toEqual([])
    const { violations } = checkRunner([belief(250)], ops)
    expect(violations.map((v) => `${v.check}: ${v.message}`)).toEqual([
      "held-after-takeover: lease.held was true for A (token 1, ttl 100, margin 10) at t=250.0, 78.0 ms after B's renew of token 2 was acknowledged (its acquire's reply was lost)",
    ])
    // Until that renew returned, nothing proved the takeover (and A's deadline, 90, had not passed
    // by more than the slack).
    expect(checks([belief(110)], ops)).toEqual([])
    // On a client clock, the lost acquire's clock is the one that judged A's lease expired: A's
    // Leaser (ttl 400, deadline 390) still held it at 250 on its own clock.
    const ahead = ops.map((o) =>
      o.holder === 'B' && o.op === 'acquire'
        ? { ...o, offsetAtInvoke: 500 }
        : o.holder === 'A'
          ? { ...o, ttl: 400 }
          : o,
    )
    const beyond = checkRunner([belief(250, true, { ttl: 400 })], ahead)
    expect(beyond.violations).toEqual([])
    expect(beyond.summary.wrongBeliefsBeyondMargin).toBe(1)
  })

  test("only the successor's own lost acquires, sent before its proof, can have read the skewed clock", () => {
    // As above with A's ttl 400 (deadline 390): B's renew at 170..172 proves a takeover the store
    // should not have allowed, and A's yes at 250 is wrong unless the acquire that took token 2 read a
    // clock far ahead. Each op added here ran 500 ms ahead, but none can have been that acquire: one
    // answered LEASE_HELD, another holder's lost acquire, B's own sent after its renew returned.
    const ops = [
      op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 2, ttl: 400 }),
      op('acquire', { holder: 'B', invoke: 150, outcome: 'info', ttl: 100 }),
      op('renew', { holder: 'B', token: 2, invoke: 170, complete: 172, ttl: 100 }),
    ]
    const ahead = { offsetAtInvoke: 500, ttl: 100 }
    const unrelated = [
      op('acquire', { holder: 'B', invoke: 60, complete: 61, outcome: 'fail', code: 'LEASE_HELD', ...ahead }),
      op('acquire', { holder: 'C', invoke: 140, outcome: 'info', ...ahead }),
      op('acquire', { holder: 'B', invoke: 180, outcome: 'info', ...ahead }),
    ]
    for (const extra of [undefined, ...unrelated]) {
      const { violations, summary } = checkRunner(
        [belief(250, true, { ttl: 400 })],
        extra ? [...ops, extra] : ops,
      )
      expect(violations.map((v) => v.check)).toEqual(['held-after-takeover'])
      expect(summary.wrongBeliefsBeyondMargin).toBe(0)
    }
  })

  test('a takeover still in flight when held was asked proves nothing', () => {
    expect(checks([belief(159)], history())).toEqual([])
  })

  test('client clock: skew beyond the margin is counted, not a violation; within it, a violation', () => {
    // B's clock 500 ms ahead of A's: B saw the lease expire early, while A renewed on (at 120: its
    // deadline 210). The margin (10) never promised this.
    const beyond = checkRunner([belief(200)], history({ b: 500, renewedAgainAt: 120 }))
    expect(beyond.violations).toEqual([])
    expect(beyond.summary.wrongBeliefsBeyondMargin).toBe(1)
    // Skew never moves the local deadline: without that renew, a yes at 200 is 60 ms past it.
    expect(checks([belief(200)], history({ b: 500 }))).toEqual(['held-after-takeover'])
    // 5 ms of skew is within the 10 ms margin (less the 25 ms tolerance it is not, so widen the margin).
    expect(checks([belief(200, true, { margin: 100 })], history({ b: 5 }))).toEqual(['held-after-takeover'])
  })

  test('an unacknowledged renew sent on a clock jumped back excuses a takeover', () => {
    // A's renew at 80 went out with A's clock 500 ms behind and its reply was lost: the store's expiry
    // may be 500 ms earlier than the Leaser assumes. That is skew beyond the margin, not a broken deadline.
    // A's acknowledged renew at 120 keeps its deadline (margin 50) at 170. The offset is the nemesis's
    // on a client clock; on a server clock, the host's wall clock stepped back (history.ts records it).
    const ops = [
      ...history({ renewedAgainAt: 120 }),
      op('renew', { holder: 'A', token: 1, invoke: 80, outcome: 'info', offsetAtInvoke: -500 }),
    ]
    const { violations, summary } = checkRunner([belief(190, true, { margin: 50 })], ops)
    expect(violations).toEqual([])
    expect(summary.wrongBeliefsBeyondMargin).toBe(1)
    // Without the jump, the same yes is a violation.
    const steady = ops.map((o) =>
      o.outcome === 'info' ? { ...o, offsetAtInvoke: 0, offsetAtComplete: 0 } : o,
    )
    expect(checks([belief(190, true, { margin: 50 })], steady)).toEqual(['held-after-takeover'])
  })

  test('counts runs, beliefs and fence refusals', () => {
    const { summary } = checkRunner(
      [belief(100), belief(200, false), run('ok', 0, 120), run('lost', 0, 210, 2)],
      history(),
    )
    expect(summary).toMatchObject({
      runs: { ok: 1, lost: 1 },
      beliefs: 2,
      heldBeliefs: 1,
      landed: 2,
      refusedByFence: 2,
    })
  })

  // Found in session 26 by writing illegal histories one bug at a time (mutation testing of the checker).
  test('held after its own release was acknowledged is caught, with no successor', () => {
    const ops = [
      ...history().filter((o) => o.holder === 'A'),
      op('release', { holder: 'A', token: 1, invoke: 60, complete: 62 }),
    ]
    expect(checks([belief(58)], ops)).toEqual([])
    expect(checks([belief(100)], ops)).toEqual(['held-after-takeover'])
  })

  test('held long past its local deadline is caught with no successor, and with one skew explains', () => {
    // A's last extension began at 50: its deadline is at most 140 (+ 25 of slack). Nobody took over.
    const alone = history().filter((o) => o.holder === 'A')
    expect(checks([belief(160)], alone)).toEqual([])
    expect(checks([belief(1_000)], alone)).toEqual(['held-after-takeover'])
    // An acquire answered LEASE_HELD (the Leaser adopting its own lease) starts a deadline too.
    const adopted = (heldBy?: { token: bigint; holder: string; expiresInMs: number }) => [
      ...alone,
      op('acquire', {
        holder: 'A',
        invoke: 900,
        complete: 901,
        outcome: 'fail',
        code: 'LEASE_HELD',
        ...(heldBy ? { heldBy } : {}),
      }),
    ]
    expect(checks([belief(1_000)], adopted({ token: 1n, holder: 'A', expiresInMs: 50 }))).toEqual([])
    // One naming no holder is nothing a Leaser adopts.
    expect(checks([belief(1_000)], adopted())).toEqual(['held-after-takeover'])
  })
  test('only an acknowledged acquire, renew or checkpoint of its own moves the local deadline', () => {
    // A's deadline is 0 + 100 - 10 = 90. Nothing after its acquire extended it: a renew whose reply
    // was lost, one refused, a read, and another holder's acquire answered LEASE_HELD.
    const ops = [
      op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 2, ttl: 100 }),
      op('renew', { holder: 'A', token: 1, invoke: 50, ttl: 100, outcome: 'info' }),
      op('renew', {
        holder: 'A',
        token: 1,
        invoke: 55,
        complete: 57,
        ttl: 100,
        outcome: 'fail',
        code: 'FENCED',
      }),
      op('readCheckpoint', { holder: 'A', token: 1, invoke: 60, complete: 62 }),
      op('acquire', { holder: 'C', invoke: 70, complete: 72, outcome: 'fail', code: 'LEASE_HELD' }),
    ]
    expect(checks([belief(130)], ops)).toEqual(['held-after-takeover'])
  })

  test('a takeover counts from the first proof of it, and only an op that proves it', () => {
    // A's own deadline is far off (ttl 10,000): only B's takeover can make a yes wrong.
    const holder = op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 2, ttl: 10_000 })
    const yes = belief(300, true, { ttl: 10_000 })
    const taken = op('acquire', { holder: 'B', token: 2, invoke: 100, complete: 102 })
    const renewed = op('renew', { holder: 'B', token: 2, invoke: 500, complete: 502 })
    expect(checks([yes], [holder, taken, renewed])).toEqual(['held-after-takeover'])
    // A renew of token 2 refused proves nobody took it.
    const refused = op('renew', {
      holder: 'B',
      token: 2,
      invoke: 100,
      complete: 102,
      outcome: 'fail',
      code: 'FENCED',
    })
    expect(checks([yes], [holder, refused])).toEqual([])
  })

  test('the order the ops are listed in changes no verdict', () => {
    // A's Leaser counted on a ttl of 1,000 (deadline 1,040): only B's takeover makes its yes wrong.
    const yes = belief(200, true, { ttl: 1_000 })
    expect(checks([yes], history())).toEqual(['held-after-takeover'])
    expect(checks([yes], history().reverse())).toEqual(['held-after-takeover'])
    expect(checks([belief(139)], history().reverse())).toEqual([])
  })
})
