import { type CycleRun, OPERATIONS, type Operation, runCycles } from './cycles.js'
import { round, type Spread, spread, weightedQuantile } from './stats.js'
import type { Session } from './target.js'
import { workleaseOps } from './worklease-ops.js'

export interface ThroughputSettings {
  readonly concurrencies: readonly number[]
  readonly workIdCounts: readonly number[]
  readonly repetitions: number
  /**
   * Repetitions for the in-process memory backend instead. Its cycle takes a few microseconds, so a
   * repetition's ratio moves with every scavenge and scheduler hiccup (0.66 to 1.18 within one cell):
   * it takes more of them for a median as steady as a server's.
   */
  readonly inProcessRepetitions: number
  readonly durationMs: number
  readonly warmupMs: number
  readonly ttlMs: number
  readonly state: Uint8Array
}

export interface SideResult {
  /** Completed cycles per second over the repetitions. */
  readonly cyclesPerSecond: Spread
  /**
   * Latency of each operation in ms over every completed cycle of every repetition, estimated from
   * the timed ones: each worker's first 1,000 cycles, then every 16th counting for 16 (see `CycleRun`).
   */
  readonly latencyMs: Record<Operation, { readonly p50: number; readonly p99: number }>
  /** Round trips sent per completed cycle (held retries included). */
  readonly roundTripsPerCycle: number
  /** Acquires that met a held lease, per completed cycle. */
  readonly heldPerCycle: number
  /** Cycles abandoned because the lease was lost mid-cycle (see `CycleRun.lost`); 0 on atomic servers. */
  readonly lostCycles: number
}

export interface CellResult {
  readonly concurrency: number
  readonly workIds: number
  readonly worklease: SideResult
  readonly baseline: SideResult
  /** worklease cycles/s divided by baseline cycles/s, paired repetition by repetition. */
  readonly ratio: Spread
}

const collectGarbage: () => void = (globalThis as { gc?: () => void }).gc ?? (() => undefined)

/** One side of a cell over its repetitions. */
export function summarize(runs: readonly CycleRun[]): SideResult {
  const latencyMs = {} as Record<Operation, { p50: number; p99: number }>
  const weights = runs.flatMap((run) => run.latencyWeights)
  for (const operation of OPERATIONS) {
    const all = runs.flatMap((run) => run.latencies[operation])
    latencyMs[operation] = {
      p50: round(weightedQuantile(all, weights, 0.5)),
      p99: round(weightedQuantile(all, weights, 0.99)),
    }
  }
  const cycles = runs.reduce((sum, run) => sum + run.cycles, 0)
  const rate = spread(runs.map((run) => (run.cycles * 1000) / run.elapsedMs))
  return {
    cyclesPerSecond: { median: round(rate.median), min: round(rate.min), max: round(rate.max) },
    latencyMs,
    roundTripsPerCycle: round(runs.reduce((sum, run) => sum + run.roundTrips, 0) / cycles),
    heldPerCycle: round(runs.reduce((sum, run) => sum + run.held, 0) / cycles),
    lostCycles: runs.reduce((sum, run) => sum + run.lost, 0),
  }
}

/**
 * Every (concurrency, workIds) cell, worklease and baseline interleaved: each repetition runs both
 * sides back to back, in alternating order (AB, BA, AB, ...), so drift in the machine's load hits both.
 * The ratio is taken per repetition, then its median and range are reported.
 *
 * ```ts
 * const cells = await measureThroughput(session, settings, console.error)
 * ```
 */
export async function measureThroughput(
  session: Session,
  settings: ThroughputSettings,
  log: (line: string) => void,
): Promise<CellResult[]> {
  const sides = { worklease: workleaseOps(session.backend), baseline: session.baseline }
  const load = (concurrency: number, workIds: number, durationMs: number, prefix: string) => ({
    concurrency,
    workIds,
    durationMs,
    ttlMs: settings.ttlMs,
    state: settings.state,
    prefix,
  })
  // Warm-up: JIT, pool connections, prepared plans, rows for every workId.
  for (const ops of [sides.worklease, sides.baseline, sides.worklease, sides.baseline]) {
    await runCycles(ops, session.roundTrips, load(16, 1000, settings.warmupMs / 4, 'warm'))
  }
  const cells: CellResult[] = []
  for (const concurrency of settings.concurrencies) {
    for (const workIds of settings.workIdCounts) {
      const prefix = `c${concurrency}-n${workIds}`
      const runs = { worklease: [] as CycleRun[], baseline: [] as CycleRun[] }
      const ratios: number[] = []
      for (let rep = 0; rep < settings.repetitions; rep++) {
        const order =
          rep % 2 === 0 ? (['worklease', 'baseline'] as const) : (['baseline', 'worklease'] as const)
        for (const side of order) {
          // Garbage one side left behind must not be collected on the other side's time.
          collectGarbage()
          runs[side].push(
            await runCycles(
              sides[side],
              session.roundTrips,
              load(concurrency, workIds, settings.durationMs, prefix),
            ),
          )
        }
        const rate = (run: CycleRun) => run.cycles / run.elapsedMs
        ratios.push(rate(runs.worklease[rep]!) / rate(runs.baseline[rep]!))
      }
      const ratio = spread(ratios)
      const cell: CellResult = {
        concurrency,
        workIds,
        worklease: summarize(runs.worklease),
        baseline: summarize(runs.baseline),
        ratio: { median: round(ratio.median), min: round(ratio.min), max: round(ratio.max) },
      }
      log(
        `  c=${concurrency} workIds=${workIds}: worklease ${cell.worklease.cyclesPerSecond.median} cycles/s, ` +
          `baseline ${cell.baseline.cyclesPerSecond.median} cycles/s, ratio ${cell.ratio.median} ` +
          `[${cell.ratio.min}..${cell.ratio.max}]`,
      )
      cells.push(cell)
    }
  }
  return cells
}
