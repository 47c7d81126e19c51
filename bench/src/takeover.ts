import { performance } from 'node:perf_hooks'
import { isLeaseHeldError } from '@worklease/spec'
import { measureTakeover, type TakeoverResult } from './peers/measure.js'
import { workleaseSide } from './peers/worklease-side.js'
import { median, round } from './stats.js'
import type { Session } from './target.js'

export interface WorkleaseTakeover {
  readonly ttlMs: number
  /**
   * One round trip, ms: the median of 10 acquires of a held lease (LEASE_HELD), each divided by the
   * round trips it sent (two where the driver reads the holder after its refused write).
   */
  readonly roundTripMs: number
  /**
   * Whether the driver's LEASE_HELD carries the holder's expiry (`holder.expiresInMs`), which a
   * waiting runner can sleep until instead of polling (issue 15 item 7).
   */
  readonly heldErrorCarriesExpiry: boolean
  /** Issue 15's goal for a crash: from expiry to the successor's acquire within 2 round trips + 50 ms. */
  readonly crashGoalMs: number
  readonly crash: TakeoverResult
  readonly release: TakeoverResult
}

/**
 * Takeover latency of worklease's runner (`Leaser` with `wait: true`, default options) over
 * `session.backend`: after a crash (the holder never renews; ttl `ttlMs`) and after a release.
 * Whatever the runner does while waiting (backoff today; sleeping until the holder's expiry once it
 * reads LEASE_HELD's `holder.expiresInMs`) is what gets measured: no option here picks a strategy.
 *
 * ```ts
 * const takeover = await measureWorkleaseTakeover(session, { ttlMs: 1_000, rounds: 20, parallel: 8, prefix })
 * ```
 */
export async function measureWorkleaseTakeover(
  session: Session,
  options: { ttlMs: number; rounds: number; parallel: number; prefix: string; unit: string },
): Promise<WorkleaseTakeover> {
  const { backend } = session
  const probeKey = `${options.prefix}-probe`
  const probe = await backend.acquire(probeKey, 'probe-holder', 30_000)
  const trips: number[] = []
  let carries = false
  for (let i = 0; i < 10; i++) {
    const tripsBefore = session.roundTrips()
    const started = performance.now()
    try {
      await backend.acquire(probeKey, 'probe-waiter', 30_000)
    } catch (error) {
      if (!isLeaseHeldError(error)) throw error
      const holder = (error as { holder?: { expiresInMs?: unknown } }).holder
      if (typeof holder?.expiresInMs === 'number') carries = true
    }
    trips.push((performance.now() - started) / Math.max(1, session.roundTrips() - tripsBefore))
  }
  await backend.release(probe)
  const roundTripMs = round(median(trips))
  const side = workleaseSide(backend, session.roundTrips, options.unit)
  try {
    // One kind after the other, as the peers are measured: `parallel` rounds in flight, not twice that.
    const measure = (kind: 'crash' | 'release') =>
      measureTakeover(side, {
        kind,
        rounds: options.rounds,
        parallel: options.parallel,
        ttlMs: options.ttlMs,
        prefix: `${options.prefix}-${kind}`,
      })
    const crash = await measure('crash')
    const release = await measure('release')
    return {
      ttlMs: options.ttlMs,
      roundTripMs,
      heldErrorCarriesExpiry: carries,
      crashGoalMs: round(2 * roundTripMs + 50),
      crash,
      release,
    }
  } finally {
    await side.close()
  }
}
