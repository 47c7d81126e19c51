import { performance } from 'node:perf_hooks'
import { type CpuTime, withCpuTime } from '../cpu-time.js'
import { withGcTime } from '../gc-time.js'
import { soloAcquireTrips } from '../solo-acquire-trips.js'
import { quantile, round, type Spread, spread } from '../stats.js'
import { type LockSide, sleep } from './lock-side.js'

const spread3 = (values: readonly number[]): Spread => {
  const s = spread(values)
  return { median: round(s.median), min: round(s.min), max: round(s.max) }
}

/** {@link lockCycles}, with the garbage collection and CPU time they took. */
async function runLockCycles(
  side: LockSide,
  load: { concurrency: number; durationMs: number; ttlMs: number; prefix: string },
  serverCpuMs?: () => Promise<number | undefined>,
): Promise<{
  cycles: number
  elapsedMs: number
  roundTrips: number
  held: number
  gcMs: number
  cpu: CpuTime
}> {
  const {
    value: { value, gcMs },
    cpu,
  } = await withCpuTime(() => withGcTime(() => lockCycles(side, load)), serverCpuMs)
  return { ...value, gcMs, cpu }
}

/** Acquire + release cycles of one side: each worker cycles over its own keys, so workers never collide. */
async function lockCycles(
  side: LockSide,
  load: { concurrency: number; durationMs: number; ttlMs: number; prefix: string },
): Promise<{ cycles: number; elapsedMs: number; roundTrips: number; held: number }> {
  let cycles = 0
  let held = 0
  const before = side.roundTrips()
  const started = performance.now()
  const deadline = started + load.durationMs
  await Promise.all(
    Array.from({ length: load.concurrency }, async (_, worker) => {
      for (let n = 0; performance.now() < deadline; n++) {
        const lock = await side.tryAcquire(`${load.prefix}-w${worker}-${n % 8}`, load.ttlMs)
        if (lock === null) {
          // Only possible if a release did not take: counted, never silently retried.
          held++
          continue
        }
        await side.release(lock)
        cycles++
      }
    }),
  )
  return { cycles, elapsedMs: performance.now() - started, roundTrips: side.roundTrips() - before, held }
}

export interface PeerCycleCell {
  readonly concurrency: number
  /** Per side (same order as the sides): cycles/s over the repetitions. */
  readonly cyclesPerSecond: readonly Spread[]
  /** Per side: round trips per completed cycle (acquire + release). */
  readonly roundTripsPerCycle: readonly number[]
  /**
   * Per side: milliseconds of garbage collection per 1,000 cycles (the whole process, so a peer's
   * client is counted with it): where a runner keeps objects alive longer, it shows here first.
   */
  readonly gcMsPerThousandCycles: readonly Spread[]
  /**
   * Per side: µs of this process's CPU per cycle (every side's client lives in it, idle but for the
   * side running). Absent only from results made before CPU was measured.
   */
  readonly clientCpuUsPerCycle?: readonly Spread[]
  /** Per side: µs of the store server's CPU per cycle, where it runs here and reports its own (Redis). */
  readonly serverCpuUsPerCycle?: readonly Spread[]
  /**
   * Per side: µs per cycle of the rest of the machine's busy CPU (the store's server where it reports
   * none, some of the kernel's network work, anything else running); absent without Linux's
   * /proc/stat. Where the cores are saturated, cycles/s fall as the three together grow.
   */
  readonly restOfMachineCpuUsPerCycle?: readonly Spread[]
  /** Per side: acquires that found a key held although its worker had released it (must be 0). */
  readonly heldAfterRelease: readonly number[]
  /** Per side: worklease (Leaser, side 0) cycles/s ÷ that side's, paired repetition by repetition. */
  readonly ratio: readonly Spread[]
  /** Per side: worklease's driver alone (side 1) cycles/s ÷ that side's, paired the same way. */
  readonly driverRatio: readonly Spread[]
}

/**
 * Acquire + release cycles/s of every side at each concurrency, interleaved: every repetition runs
 * each side once for `durationMs`, in a rotated order (so no side always runs first or last), and the
 * ratio worklease (side 0) / peer is taken per repetition.
 *
 * ```ts
 * const cells = await measurePeerCycles(sides, { concurrencies: [1, 16], repetitions: 4, ... })
 * ```
 */
export async function measurePeerCycles(
  sides: readonly LockSide[],
  settings: {
    concurrencies: readonly number[]
    repetitions: number
    durationMs: number
    warmupMs: number
    ttlMs: number
    prefix: string
  },
  log: (line: string) => void,
  /** The store server's CPU time so far, ms, where it runs here and reports its own. */
  serverCpuMs?: () => Promise<number | undefined>,
): Promise<PeerCycleCell[]> {
  for (const side of sides) {
    await runLockCycles(side, {
      concurrency: 16,
      durationMs: settings.warmupMs / sides.length,
      ttlMs: settings.ttlMs,
      prefix: `${settings.prefix}-warm`,
    })
  }
  const cells: PeerCycleCell[] = []
  for (const concurrency of settings.concurrencies) {
    const runs = sides.map(() => [] as Awaited<ReturnType<typeof runLockCycles>>[])
    for (let rep = 0; rep < settings.repetitions; rep++) {
      for (let k = 0; k < sides.length; k++) {
        const index = (k + rep) % sides.length
        runs[index]!.push(
          await runLockCycles(
            sides[index]!,
            {
              concurrency,
              durationMs: settings.durationMs,
              ttlMs: settings.ttlMs,
              prefix: `${settings.prefix}-c${concurrency}`,
            },
            serverCpuMs,
          ),
        )
      }
    }
    const rate = (run: { cycles: number; elapsedMs: number }) => (run.cycles * 1000) / run.elapsedMs
    const cell: PeerCycleCell = {
      concurrency,
      cyclesPerSecond: runs.map((list) => spread3(list.map(rate))),
      roundTripsPerCycle: runs.map((list) =>
        round(
          list.reduce((sum, run) => sum + run.roundTrips, 0) /
            Math.max(
              1,
              list.reduce((sum, run) => sum + run.cycles, 0),
            ),
        ),
      ),
      gcMsPerThousandCycles: runs.map((list) =>
        spread3(list.map((run) => (run.gcMs * 1000) / Math.max(1, run.cycles))),
      ),
      ...cpuPerCycle(runs),
      heldAfterRelease: runs.map((list) => list.reduce((sum, run) => sum + run.held, 0)),
      ratio: runs.map((list) => spread3(list.map((run, rep) => rate(runs[0]![rep]!) / rate(run)))),
      driverRatio: runs.map((list) => spread3(list.map((run, rep) => rate(runs[1]![rep]!) / rate(run)))),
    }
    log(
      `  c=${concurrency}: ${sides
        .map(
          (side, i) =>
            `${side.label} ${cell.cyclesPerSecond[i]!.median}/s${i > 1 ? ` (Leaser x${cell.ratio[i]!.median}, driver x${cell.driverRatio[i]!.median})` : ''}`,
        )
        .join(', ')}`,
    )
    cells.push(cell)
  }
  return cells
}

/**
 * µs a cycle of each CPU time measured, per side over its repetitions. The server's only if every run
 * read it; else its CPU stays in the rest of the machine, in every run alike.
 */
function cpuPerCycle(
  runs: readonly (readonly { cycles: number; cpu: CpuTime }[])[],
): Pick<PeerCycleCell, 'clientCpuUsPerCycle' | 'serverCpuUsPerCycle' | 'restOfMachineCpuUsPerCycle'> {
  const perCycle = (ms: (cpu: CpuTime) => number) =>
    runs.map((list) => spread3(list.map((run) => (ms(run.cpu) * 1000) / Math.max(1, run.cycles))))
  const all = (has: (cpu: CpuTime) => boolean) => runs.every((list) => list.every((run) => has(run.cpu)))
  const withServer = all((cpu) => cpu.serverMs !== undefined)
  return {
    clientCpuUsPerCycle: perCycle((cpu) => cpu.processMs),
    ...(withServer ? { serverCpuUsPerCycle: perCycle((cpu) => cpu.serverMs!) } : {}),
    ...(all((cpu) => cpu.restOfMachineMs !== undefined)
      ? {
          restOfMachineCpuUsPerCycle: perCycle(
            (cpu) => cpu.restOfMachineMs! + (withServer ? 0 : (cpu.serverMs ?? 0)),
          ),
        }
      : {}),
  }
}

export interface RaceResult {
  readonly acquirers: number
  readonly rounds: number
  /** Winners per round: must be 1 every time. */
  readonly winners: readonly number[]
  /** Errors other than "held", over all rounds. */
  readonly errors: number
  /** From launching the attempts to the last one settling, ms. */
  readonly settleMs: Spread
  /** (round trips of the round − the winner's acquire) / losers, averaged over rounds. */
  readonly roundTripsPerLoser: number
}

/** `acquirers` single attempts on one free key (a fresh key each round), launched in the same tick. */
export async function measureRace(
  side: LockSide,
  options: { acquirers: number; rounds: number; prefix: string; ttlMs: number },
): Promise<RaceResult> {
  const winners: number[] = []
  const settle: number[] = []
  const perLoser: number[] = []
  let errors = 0
  // What one uncontended acquire sends (a read and a write for the DynamoDB peers).
  const winnerTrips = await soloAcquireTrips(side.roundTrips, async (attempt) => {
    const solo = await side.tryAcquire(`${options.prefix}-race-solo-${attempt}`, options.ttlMs)
    return async () => {
      if (solo !== null) await side.release(solo)
    }
  })
  for (let r = 0; r < options.rounds; r++) {
    const key = `${options.prefix}-race-${r}`
    const before = side.roundTrips()
    const started = performance.now()
    const results = await Promise.allSettled(
      Array.from({ length: options.acquirers }, () => side.tryAcquire(key, options.ttlMs)),
    )
    settle.push(performance.now() - started)
    const won = results.filter((result) => result.status === 'fulfilled' && result.value !== null)
    errors += results.filter((result) => result.status === 'rejected').length
    winners.push(won.length)
    const losers = options.acquirers - won.length
    if (losers > 0) perLoser.push((side.roundTrips() - before - won.length * winnerTrips) / losers)
    for (const result of won) await side.release((result as PromiseFulfilledResult<unknown>).value)
  }
  return {
    acquirers: options.acquirers,
    rounds: options.rounds,
    winners,
    errors,
    settleMs: spread3(settle),
    roundTripsPerLoser: round(perLoser.reduce((sum, value) => sum + value, 0) / Math.max(1, perLoser.length)),
  }
}

export type TakeoverKind = 'crash' | 'release'

export interface TakeoverResult {
  readonly kind: TakeoverKind
  readonly ttlMs: number
  /** Rounds measured (each a fresh key, one holder and one waiter). */
  readonly rounds: number
  /** ms from the moment the lock was free (expiry, or release returned) to the waiter holding it. */
  readonly p50Ms?: number
  readonly p99Ms?: number
  readonly maxMs?: number
  /** Rounds whose waiter failed or did not get the lock within the round's limit. */
  readonly failures: number
  /** The first failure's message, so a ⚠ in the report can be told apart from a slow store. */
  readonly firstFailure?: string
  /** Why it was not measured for this side (no expiry, ...). */
  readonly notMeasured?: string
}

/**
 * Takeover latency. `crash`: a holder takes a fresh key with `ttlMs` and never renews nor releases;
 * a waiter starts at once (the library's own waiting acquire) and the latency is from the lock
 * becoming free (the holder's acquire start + ttl, so it includes up to one round trip of slack) to
 * the waiter holding it. `release`: the holder releases 200-600 ms after the waiter started waiting
 * (well inside the ttl); the latency is from the release call returning to the waiter holding it.
 * `parallel` rounds run at once (each on its own key) so a run takes a few ttls, not rounds × ttl.
 */
export async function measureTakeover(
  side: LockSide,
  options: { kind: TakeoverKind; rounds: number; parallel: number; ttlMs: number; prefix: string },
): Promise<TakeoverResult> {
  const { kind, ttlMs } = options
  const latencies: number[] = []
  let failures = 0
  let firstFailure: string | undefined
  const fail = (why: string) => {
    failures++
    firstFailure ??= why
  }
  let notMeasured: string | undefined
  const limitMs = ttlMs * 10 + 5_000
  const round1 = async (r: number) => {
    const key = `${options.prefix}-${kind}-${r}`
    // Spread the rounds over 200 ms, so parallel waiters do not poll in lockstep.
    await sleep(Math.random() * 200)
    if (kind === 'crash') {
      const crashed = await side.crash(key, ttlMs)
      if ('notMeasured' in crashed) {
        notMeasured = crashed.notMeasured
        return
      }
      const waiting = side.waitAcquire(key, ttlMs)
      const held = await withLimit(waiting, limitMs)
      if (held === undefined) {
        fail(`no takeover within ${limitMs} ms`)
        return
      }
      const at = performance.now()
      latencies.push(at - (await crashed.freeAt))
      await side.release(held)
      return
    }
    const holder = await side.tryAcquire(key, ttlMs)
    if (holder === null) throw new Error(`${side.label}: a fresh key was held`)
    let releasedAt = Number.NaN
    const waiting = side.waitAcquire(key, ttlMs).then((held) => {
      const at = performance.now()
      return { held, at }
    })
    await sleep(200 + Math.random() * 400)
    await side.release(holder)
    releasedAt = performance.now()
    const got = await withLimit(waiting, limitMs)
    if (got === undefined) {
      fail(`no takeover within ${limitMs} ms`)
      return
    }
    latencies.push(got.at - releasedAt)
    await side.release(got.held)
  }
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(options.parallel, options.rounds) }, async () => {
      while (next < options.rounds && notMeasured === undefined) {
        const r = next++
        try {
          await round1(r)
        } catch (error) {
          fail(error instanceof Error ? `${error.name}: ${error.message.split('\n')[0]}` : String(error))
        }
      }
    }),
  )
  if (notMeasured !== undefined) return { kind, ttlMs, rounds: 0, failures: 0, notMeasured }
  return {
    kind,
    ttlMs,
    rounds: latencies.length,
    ...(latencies.length > 0
      ? {
          p50Ms: round(quantile(latencies, 0.5)),
          p99Ms: round(quantile(latencies, 0.99)),
          maxMs: round(Math.max(...latencies)),
        }
      : {}),
    failures,
    ...(firstFailure ? { firstFailure } : {}),
  }
}

/** Resolves with the promise's value, or `undefined` after `ms` (the promise is left to settle). */
async function withLimit<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      promise,
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), ms)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}
