import { performance } from 'node:perf_hooks'
import { isWorkleaseError } from '@worklease/spec'
import { type LeaseOps, LostLeaseError } from './lease-ops.js'

const clock = () => performance.now()
const untimed = () => 0

/** How many cycles each worker times from its start ... */
export const TIMED_FIRST = 1000
/** ... and after that one cycle in this many (which then stands for this many). */
export const SAMPLE_EVERY = 16

export const OPERATIONS = ['acquire', 'checkpoint', 'renew', 'release'] as const
export type Operation = (typeof OPERATIONS)[number]

/** How one timed run drives a side. */
export interface CycleLoad {
  /** Workers issuing cycles at once. */
  readonly concurrency: number
  /**
   * Distinct workIds. With at least one per worker, each worker cycles through its own slice, so
   * workers never collide; with fewer, they share them and acquires meet held leases.
   */
  readonly workIds: number
  readonly durationMs: number
  readonly ttlMs: number
  readonly state: Uint8Array
  /** Prefix of the workIds, so cells never share a row. */
  readonly prefix: string
}

/** What one timed run measured. */
export interface CycleRun {
  readonly cycles: number
  readonly elapsedMs: number
  /** Acquires answered "held" (only when workers share workIds). */
  readonly held: number
  /**
   * Cycles abandoned because a later call found the lease lost (FENCED / LEASE_EXPIRED, or the
   * baseline's matched-nothing). Only a server whose acquires are not atomic (FerretDB 1.x) produces
   * them: two workers both "won" the same workId.
   */
  readonly lost: number
  /**
   * Per-operation latencies of the timed completed cycles, in ms: each worker times its first
   * {@link TIMED_FIRST} cycles, then one in {@link SAMPLE_EVERY}.
   */
  readonly latencies: Record<Operation, number[]>
  /**
   * How many cycles each timed one stands for (same index as in `latencies`): 1 for the first
   * {@link TIMED_FIRST}, then {@link SAMPLE_EVERY}. Quantiles weigh the samples by it
   * (`weightedQuantile` in stats.ts), so they estimate the distribution over every completed cycle.
   */
  readonly latencyWeights: number[]
  readonly roundTrips: number
}

/**
 * Runs full lease cycles (acquire, checkpoint, renew, release) with `concurrency` workers until the
 * duration is up; a worker whose acquire finds the lease held tries again at once (that attempt is
 * counted in `held`, not in the latencies). Only completed cycles count.
 *
 * ```ts
 * const run = await runCycles(ops, () => session.roundTrips(), { concurrency: 16, workIds: 1000, ... })
 * ```
 */
export async function runCycles(ops: LeaseOps, roundTrips: () => number, load: CycleLoad): Promise<CycleRun> {
  const latencies: Record<Operation, number[]> = { acquire: [], checkpoint: [], renew: [], release: [] }
  const latencyWeights: number[] = []
  let cycles = 0
  let held = 0
  let lost = 0
  const tripsBefore = roundTrips()
  const started = performance.now()
  const deadline = started + load.durationMs
  const worker = async (index: number) => {
    const holderId = `${load.prefix}-holder-${index}`
    const slice = Math.floor(load.workIds / load.concurrency)
    // Completed cycles of this worker: what the sampling counts (attempts whose acquire found the
    // lease held, or whose lease was lost, are no cycles).
    let done = 0
    for (let n = 0; performance.now() < deadline; n++) {
      const id = slice > 0 ? index * slice + (n % slice) : (index + n) % load.workIds
      const workId = `${load.prefix}-${id}`
      // In-process stores run a cycle in about a microsecond, where reading the clock five times would
      // be a visible share of it: after a worker's first 1,000 cycles only every 16th is timed, and
      // counts for the 16 (this one and the next 15).
      const weight = done < TIMED_FIRST ? 1 : (done - TIMED_FIRST) % SAMPLE_EVERY === 0 ? SAMPLE_EVERY : 0
      const timed = weight > 0
      const now = timed ? clock : untimed
      const t0 = now()
      let lease: unknown
      try {
        lease = await ops.acquire(workId, holderId, load.ttlMs)
      } catch (error) {
        if (!ops.isHeld?.(error)) throw error
        lease = null
      }
      const t1 = now()
      if (lease === null) {
        held++
        // Let the holder's replies through even when every call resolves without I/O (memory).
        await new Promise<void>((resolve) => setImmediate(resolve))
        continue
      }
      let t2: number
      let t3: number
      let t4: number
      try {
        await ops.checkpoint(lease, load.state, load.ttlMs)
        t2 = now()
        await ops.renew(lease, load.ttlMs)
        t3 = now()
        await ops.release(lease)
        t4 = now()
      } catch (error) {
        if (!(error instanceof LostLeaseError) && !isWorkleaseError(error)) throw error
        lost++
        continue
      }
      cycles++
      done++
      if (!timed) continue
      latencies.acquire.push(t1 - t0)
      latencies.checkpoint.push(t2 - t1)
      latencies.renew.push(t3 - t2)
      latencies.release.push(t4 - t3)
      latencyWeights.push(weight)
    }
  }
  await Promise.all(Array.from({ length: load.concurrency }, (_, index) => worker(index)))
  return {
    cycles,
    elapsedMs: performance.now() - started,
    held,
    lost,
    latencies,
    latencyWeights,
    roundTrips: roundTrips() - tripsBefore,
  }
}
