import assert from 'node:assert/strict'
import { againAfterHostClockStep, type Backend, systemClock } from '@worklease/spec'
import { LeasePool } from '../lease-pool.js'
import type { LeasePoolOptions } from '../lease-pool-options.js'
import { Leaser } from '../leaser.js'
import type { PoolHandler, PoolUnit } from '../unit-runner.js'
import type { LeaserSuiteHarness } from './leaser-suite.js'

/** Options of {@link poolSuite}; the same shape as `leaserSuite`'s. */
export interface PoolSuiteOptions {
  /**
   * Shown in the suite's name.
   *
   * ```ts
   * poolSuite({ name: 'postgres', describe, test, factory })
   * ```
   */
  name: string
  /**
   * vitest's (or jest's) `describe`.
   *
   * ```ts
   * import { describe, test } from 'vitest'
   * ```
   */
  describe: (name: string, body: () => void) => void
  /**
   * vitest's (or jest's) `test`; the third argument is the case's timeout in milliseconds.
   *
   * ```ts
   * import { describe, test } from 'vitest'
   * ```
   */
  test: (name: string, body: () => Promise<void>, timeoutMs?: number) => void
  /**
   * Makes a fresh harness per case; its backends must have the `list` capability.
   *
   * ```ts
   * poolSuite({ name: 'memory', describe, test, factory: () => ({ open: () => new MemoryBackend({ store }), close: async () => {} }) })
   * ```
   */
  factory: () => LeaserSuiteHarness | Promise<LeaserSuiteHarness>
  /**
   * The ttl of every lease, in real milliseconds. Default: 1000.
   *
   * ```ts
   * poolSuite({ name: 'dynamodb', describe, test, factory, ttlMs: 2_000 })
   * ```
   */
  ttlMs?: number
}

const encode = (text: string) => new TextEncoder().encode(text)
const decode = (bytes: Uint8Array | null) => (bytes === null ? null : new TextDecoder().decode(bytes))

/** One handler run the referee is watching. */
interface Run {
  readonly member: string
  readonly fencingToken: bigint
  /** Its signal is read through the unit each time, as a handler would: that read checks the deadline. */
  readonly unit: PoolUnit
  readonly startedAt: number
}

/**
 * Watches every handler run of every member: a unit must never have two runs whose signals are both
 * live, and each run records how it found the unit (state, clean handoff). An overlap names both
 * runs' tokens and start times: a newer token means the store let the first lease end while its
 * holder still ran under it; an older one, that the store forgot the first lease.
 */
class Referee {
  readonly #origin = performance.now()
  readonly live = new Map<string, Set<Run>>()
  readonly overlaps: string[] = []
  readonly starts: Array<{ unit: string; member: string; state: string | null; cleanHandoff: boolean }> = []

  handler(member: string, body: (unit: string, signal: AbortSignal) => Promise<void>): PoolHandler {
    return async (lease, unit) => {
      const { state, cleanHandoff } = await lease.readCheckpoint()
      const runs = this.live.get(unit.id) ?? new Set()
      const run: Run = {
        member,
        fencingToken: lease.fencingToken,
        unit,
        startedAt: Math.round(performance.now() - this.#origin),
      }
      for (const other of runs) {
        if (other.unit.signal.aborted) continue
        this.overlaps.push(
          `${unit.id} started by ${member} (token ${run.fencingToken}, at ${run.startedAt} ms) while ` +
            `${other.member} ran it (token ${other.fencingToken}, since ${other.startedAt} ms)`,
        )
      }
      this.starts.push({ unit: unit.id, member, state: decode(state), cleanHandoff })
      runs.add(run)
      this.live.set(unit.id, runs)
      try {
        await body(unit.id, unit.signal)
        await lease.checkpoint(encode(`${member} stopped ${unit.id}`)).catch(() => undefined)
      } finally {
        runs.delete(run)
      }
    }
  }
}

/** A backend that can be cut off from the store: every call from then on fails like a dead network. */
class Cuttable implements Backend {
  #down = false
  constructor(readonly inner: Backend) {}
  get capabilities() {
    return this.inner.capabilities
  }
  cut(): void {
    this.#down = true
  }
  #call<T>(call: () => Promise<T>): Promise<T> {
    if (this.#down) return Promise.reject(Object.assign(new Error('cut off'), { code: 'ECONNREFUSED' }))
    return call()
  }
  acquire(...args: Parameters<Backend['acquire']>) {
    return this.#call(() => this.inner.acquire(...args))
  }
  checkpoint(...args: Parameters<Backend['checkpoint']>) {
    return this.#call(() => this.inner.checkpoint(...args))
  }
  renew(...args: Parameters<Backend['renew']>) {
    return this.#call(() => this.inner.renew(...args))
  }
  release(...args: Parameters<Backend['release']>) {
    return this.#call(() => this.inner.release(...args))
  }
  readCheckpoint(...args: Parameters<Backend['readCheckpoint']>) {
    return this.#call(() => this.inner.readCheckpoint(...args))
  }
  list(...args: Parameters<NonNullable<Backend['list']>>) {
    return this.#call(() => this.inner.list!(...args))
  }
}

/**
 * Works until told to stop: what a pool's handler for a long-lived unit (a shard, a tenant) does. The
 * signal may have aborted already (the member closed during the handler's first read): an abort
 * listener added then never fires, so that case must return at once.
 */
const untilStopped = (_unit: string, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve()
    signal.addEventListener('abort', () => resolve(), { once: true })
  })

async function eventually(what: string, condition: () => boolean, timeoutMs: number): Promise<void> {
  const giveUp = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > giveUp) assert.fail(`timed out waiting for: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * LeasePool against a real backend: shares converge, units move by consent with clean handoffs,
 * crashed members' units are taken after the ttl, finished units stay finished, failing handlers are
 * retried; and never two live runs of one unit.
 *
 * ```ts
 * poolSuite({ name: 'postgres', describe, test, factory: () => ({ open: () => new KyselyBackend({ db, table }), close }) })
 * ```
 */
export function poolSuite(options: PoolSuiteOptions): void {
  const { describe, factory, name } = options
  // As in the Leaser suite: a case the host's wall clock stepped under is run again, and says why.
  const test = (caseName: string, body: () => Promise<void>, timeoutMs?: number) =>
    options.test(caseName, () => againAfterHostClockStep('poolSuite', caseName, body), timeoutMs)
  const ttlMs = options.ttlMs ?? 1_000
  const timeoutMs = ttlMs * 20 + 10_000

  async function withGroup(
    body: (
      join: Join,
      losses: readonly string[],
      noOverlap: (referee: Referee) => Promise<void>,
    ) => Promise<void>,
  ): Promise<void> {
    const harness = await factory()
    const pools: LeasePool[] = []
    // Leases lost to late renewals: a starved machine, not the protocol, moves units then.
    const losses: string[] = []
    const group = `pool-${Math.random().toString(36).slice(2, 10)}`
    let listing: Backend | undefined
    const join: Join = async (member, handler, extra = {}) => {
      const backend = new Cuttable(await harness.open({ clock: systemClock }))
      const leaser = new Leaser({ backend, ttlMs, holderId: member, renewJitter: 0 })
      leaser.on('lost', ({ workId, reason }) => losses.push(`${member} lost ${workId} (${reason})`))
      const pool = new LeasePool({
        leaser,
        group,
        handler,
        units: Array.from({ length: 10 }, (_, i) => `unit-${i}`),
        rebalanceIntervalMs: Math.max(50, Math.floor(ttlMs / 5)),
        handlerRetry: { initialDelayMs: 20, maxDelayMs: 100 },
        ...extra,
      })
      pools.push(pool)
      listing ??= backend.inner
      await pool.start()
      return { pool, leaser, cut: () => backend.cut() }
    }
    // On failure, the store's own view of the group beside the losses: enough to tell a store that
    // let a lease go early from one that forgot it, without reproducing the run.
    const noOverlap = async (referee: Referee) => {
      if (referee.overlaps.length === 0) return
      const stored = await listing
        ?.list?.({ prefix: `${group}/`, limit: 1_000 })
        .then(({ leases }) =>
          leases.map(
            (lease) =>
              `${lease.workId} ${lease.holderId} token ${lease.fencingToken}` +
              `${lease.released ? ' released' : lease.free ? ' expired' : ''}`,
          ),
        )
        .catch((error: unknown) => [`(listing failed: ${String(error)})`])
      assert.fail(
        `two live runs of one unit:\n${referee.overlaps.join('\n')}\n` +
          `losses: ${JSON.stringify(losses)}\nthe store now: ${JSON.stringify(stored)}`,
      )
    }
    try {
      await body(join, losses, noOverlap)
    } finally {
      await Promise.allSettled(pools.map((pool) => pool.close({ timeoutMs: ttlMs })))
      await harness.close()
    }
  }

  describe(`poolSuite: ${name}`, () => {
    test(
      'two members share ten units five and five, and never run one twice at once',
      () =>
        withGroup(async (join, _losses, noOverlap) => {
          const referee = new Referee()
          const a = await join('member-a', referee.handler('member-a', untilStopped))
          const b = await join('member-b', referee.handler('member-b', untilStopped))
          await eventually(
            '5 units each',
            () => a.pool.units.length === 5 && b.pool.units.length === 5,
            timeoutMs,
          )
          await noOverlap(referee)
          assert.equal(new Set([...a.pool.units, ...b.pool.units]).size, 10)
        }),
      timeoutMs,
    )

    test(
      'a member that joins gets its share by consent: the giver stops first, the taker sees its checkpoint and a clean handoff',
      () =>
        withGroup(async (join, losses, noOverlap) => {
          const referee = new Referee()
          const a = await join('member-a', referee.handler('member-a', untilStopped))
          // Its handlers' starts, not the pool's count: the pool counts a unit while it still reads
          // the unit's done mark, and a unit given up then goes back unrun, with no checkpoint to hand.
          await eventually(
            'member-a runs all ten',
            () => a.pool.units.length === 10 && new Set(referee.starts.map(({ unit }) => unit)).size === 10,
            timeoutMs,
          )
          const b = await join('member-b', referee.handler('member-b', untilStopped))
          await eventually(
            '5 units each',
            () => a.pool.units.length === 5 && b.pool.units.length === 5,
            timeoutMs,
          )
          await eventually(
            'five moves recorded',
            () => referee.starts.filter((start) => start.member === 'member-b').length >= 5,
            timeoutMs,
          )
          const moved = referee.starts.filter((start) => start.member === 'member-b')
          const story = JSON.stringify({ starts: referee.starts, losses })
          // A member that lost its membership to a late renewal drops out of the others' count for a
          // while, and units move back and forth meanwhile: more moves.
          if (losses.length === 0) assert.equal(moved.length, 5, `exactly five units moved: ${story}`)
          else assert.ok(moved.length >= 5, `at least five units moved: ${story}`)
          // Late renewals cost a member its unit leases too (they renew in one batch): a unit lost so
          // is taken after its expiry, an unclean handoff by design. Every other move is by consent.
          const lost = (unit: string) => losses.some((loss) => loss.includes(`/u/${unit} (`))
          for (const start of moved) {
            if (lost(start.unit)) continue
            assert.equal(start.cleanHandoff, true, `${start.unit}: clean handoff: ${story}`)
            assert.equal(
              start.state,
              `member-a stopped ${start.unit}`,
              `${start.unit}: the giver's checkpoint: ${story}`,
            )
          }
          await noOverlap(referee)
        }),
      timeoutMs,
    )

    /** b leaves (`close`, a clean handoff) or dies (`cut`, taken after the ttl, unclean): a takes all. */
    const handsOver = (how: 'close' | 'cut') =>
      withGroup(async (join, _losses, noOverlap) => {
        const referee = new Referee()
        const a = await join('member-a', referee.handler('member-a', untilStopped))
        const b = await join('member-b', referee.handler('member-b', untilStopped))
        await eventually(
          '5 units each',
          () => a.pool.units.length === 5 && b.pool.units.length === 5,
          timeoutMs,
        )
        const leaving = new Set(b.pool.units)
        const before = referee.starts.length
        // A cut member renews nothing and releases nothing from then on, as if it died.
        if (how === 'close') await b.pool.close()
        else b.cut()
        await eventually('member-a runs all ten', () => a.pool.units.length === 10, timeoutMs)
        const takeovers = () =>
          referee.starts
            .slice(before)
            .filter((start) => start.member === 'member-a' && leaving.has(start.unit))
        // A handler records its start after its first read: the pool counts the unit a moment earlier.
        await eventually('five takeovers recorded', () => takeovers().length >= 5, timeoutMs)
        assert.equal(takeovers().length, 5, JSON.stringify(referee.starts.slice(before)))
        for (const start of takeovers())
          assert.equal(start.cleanHandoff, how === 'close', `${start.unit}: handoff`)
        await noOverlap(referee)
      })

    test('a member that leaves hands its units over cleanly', () => handsOver('close'), timeoutMs)

    test(
      "a crashed member's units are taken after the ttl, with unclean handoffs",
      () => handsOver('cut'),
      timeoutMs,
    )

    test(
      'a unit whose handler resolves is done: no member runs it again',
      () =>
        withGroup(async (join) => {
          const runs = new Map<string, number>()
          const handler: PoolHandler = async (_lease, unit) => {
            runs.set(unit.id, (runs.get(unit.id) ?? 0) + 1)
            if (unit.id !== 'unit-0') await untilStopped(unit.id, unit.signal)
          }
          const a = await join('member-a', handler)
          const b = await join('member-b', handler)
          await eventually(
            'unit-0 done, the other nine shared',
            () => {
              const held = [...a.pool.units, ...b.pool.units]
              return !held.includes('unit-0') && held.length === 9
            },
            timeoutMs,
          )
          await new Promise((resolve) => setTimeout(resolve, ttlMs))
          assert.equal(runs.get('unit-0'), 1, 'unit-0 ran once')
          assert.ok(a.pool.units.length >= 4 && b.pool.units.length >= 4, 'the rest stays shared')
        }),
      timeoutMs,
    )

    test(
      'a handler that throws is run again on the same lease',
      () =>
        withGroup(async (join) => {
          let attempts = 0
          const tokens = new Set<bigint>()
          const a = await join(
            'member-a',
            async (lease, unit) => {
              tokens.add(lease.fencingToken)
              if (++attempts < 3) throw new Error('transient failure of the work')
              await untilStopped(unit.id, unit.signal)
            },
            { units: ['only-unit'] },
          )
          await eventually('three attempts', () => attempts >= 3, timeoutMs)
          assert.deepEqual(a.pool.units, ['only-unit'])
          assert.equal(tokens.size, 1, 'one lease for every attempt')
        }),
      timeoutMs,
    )
  })
}

type Join = (
  member: string,
  handler: PoolHandler,
  extra?: Partial<LeasePoolOptions>,
) => Promise<{ pool: LeasePool; leaser: Leaser; cut(): void }>
