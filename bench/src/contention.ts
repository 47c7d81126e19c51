import { performance } from 'node:perf_hooks'
import { isLeaseHeldError } from '@worklease/spec'
import { soloAcquireTrips } from './solo-acquire-trips.js'
import { round, type Spread, spread } from './stats.js'
import type { Session } from './target.js'

/**
 * `new`: the workId has never been leased (the race is decided by inserting the row / document / item).
 * `released`: its previous lease was released, so the row exists and is free (the race is decided by a
 * conditional update: the everyday handoff).
 */
export type ContentionKind = 'new' | 'released'

export interface ContentionResult {
  readonly kind: ContentionKind
  readonly acquirers: number
  readonly rounds: number
  /** Winners per round: must be exactly 1 every time. */
  readonly winners: readonly number[]
  /** Errors other than LEASE_HELD, over all rounds (store failures). */
  readonly otherErrors: number
  /** From launching the acquires to the last one settling, in ms. */
  readonly settleMs: Spread
  /** Round trips each loser cost: (all round trips − the winner's one) / losers, averaged over rounds. */
  readonly roundTripsPerLoser: number
  /** The same race through the hand-written baseline, for the settle time it costs without worklease. */
  readonly baselineSettleMs: Spread
  readonly baselineWinners: readonly number[]
}

/**
 * `acquirers` concurrent acquires of one free workId (a new one each round), all launched in the same
 * tick through one client whose pool has room for all of them where the server allows.
 *
 * ```ts
 * const result = await measureContention(session, { acquirers: 64, rounds: 5 })
 * ```
 */
export async function measureContention(
  session: Session,
  options: { acquirers: number; rounds: number; prefix: string; kind: ContentionKind },
): Promise<ContentionResult> {
  const { acquirers, rounds, kind } = options
  const prefix = `${options.prefix}-${kind}`
  // Leaves the workId free but existing, on both sides, before the race (not counted).
  const prepare = async (workId: string) => {
    if (kind === 'new') return
    await session.backend.release(await session.backend.acquire(workId, 'previous-holder', 30_000))
    const held = await session.baseline.acquire(workId, 'previous-holder', 30_000)
    if (held) await session.baseline.release(held)
  }
  const winners: number[] = []
  const settle: number[] = []
  const perLoser: number[] = []
  let otherErrors = 0
  // What one uncontended acquire of this kind sends (two on MySQL).
  const winnerTrips = await soloAcquireTrips(session.roundTrips, async (attempt) => {
    const soloId = `${prefix}-solo-${attempt}`
    await prepare(soloId)
    const solo = await session.backend.acquire(soloId, 'solo', 30_000)
    return () => session.backend.release(solo)
  })
  for (let r = 0; r < rounds; r++) {
    const workId = `${prefix}-contend-${r}`
    await prepare(workId)
    const before = session.roundTrips()
    const started = performance.now()
    const results = await Promise.allSettled(
      Array.from({ length: acquirers }, (_, index) =>
        session.backend.acquire(workId, `acquirer-${index}`, 30_000),
      ),
    )
    settle.push(performance.now() - started)
    const won = results.filter((result) => result.status === 'fulfilled').length
    otherErrors += results.filter(
      (result) => result.status === 'rejected' && !isLeaseHeldError(result.reason),
    ).length
    winners.push(won)
    const losers = acquirers - won
    if (losers > 0) perLoser.push((session.roundTrips() - before - won * winnerTrips) / losers)
  }
  const baselineWinners: number[] = []
  const baselineSettle: number[] = []
  for (let r = 0; r < rounds; r++) {
    const workId = `${prefix}-contend-${r}`
    const started = performance.now()
    const results = await Promise.all(
      Array.from({ length: acquirers }, (_, index) =>
        session.baseline.acquire(workId, `acquirer-${index}`, 30_000),
      ),
    )
    baselineSettle.push(performance.now() - started)
    baselineWinners.push(results.filter((result) => result !== null).length)
  }
  const roundSpread = (values: number[]) => {
    const s = spread(values)
    return { median: round(s.median), min: round(s.min), max: round(s.max) }
  }
  return {
    kind,
    acquirers,
    rounds,
    winners,
    otherErrors,
    settleMs: roundSpread(settle),
    roundTripsPerLoser: round(perLoser.reduce((sum, value) => sum + value, 0) / Math.max(1, perLoser.length)),
    baselineSettleMs: roundSpread(baselineSettle),
    baselineWinners,
  }
}
