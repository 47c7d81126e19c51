import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type CheckName, checkHistory, historySlice, type Violation } from './checker.js'
import { CounterStore } from './counter-store.js'
import { FaultProxy } from './fault-proxy.js'
import { isRead, loadHistory, type Op } from './history.js'
import { type HostClockMoves, HostClockWatch, hostClockReference } from './host-clock.js'
import type { MemoryBug } from './memory-rpc.js'
import { Nemesis } from './nemesis.js'
import type { NetworkFault } from './network-faults.js'
import { checkPool, type PoolSummary } from './pool-checks.js'
import { PoolLog, poolUnitIds } from './pool-workload.js'
import type { ProcessFault } from './process-faults.js'
import { checkRunner, type RunnerSummary } from './runner-checks.js'
import {
  loadRunnerLog,
  type RunnerBug,
  type RunnerLeaseConfig,
  runnerCounter,
  runnerProgress,
} from './runner-workload.js'
import { type BackendName, clockOf, startServer, type TargetInfo } from './targets.js'
import type { CounterWorkerSpec } from './worker.js'
import { WorkerFleet } from './worker-fleet.js'

export interface TortureOptions {
  backend: BackendName
  /** How long the random-operation workload and the nemesis run. */
  durationMs: number
  seed: number
  /** Worker processes. Default 5. */
  processes?: number
  /** Connections (pool size) per worker process. Default 3. */
  connections?: number
  /** Register workers (async) per process. Default 3. */
  registerWorkers?: number
  /** workIds the register workers share. Default 3. */
  workIds?: number
  /** Ttls the register workers pick from. Default [200, 2000]. */
  ttls?: number[]
  /** Logical counter workers per mode. Default 50. */
  counterWorkers?: number
  /** Increments per counter worker. Default 10. */
  increments?: number
  /** Counters (and workIds) per mode the counter workers are spread over. Default 5. */
  counterShards?: number
  /** How long after `durationMs` the counter workload may take to finish (under faults). Default 120 s. */
  counterGraceMs?: number
  /** Memory backend only: a deliberate bug, to show the checker catches it end to end. */
  bug?: MemoryBug
  /** Runner workers (jobs through `@worklease/core`'s Leaser.run) per process. Default 2. */
  runnerWorkers?: number
  /** workIds the runner workers share. Default 3. */
  runnerWorkIds?: number
  /** A deliberately broken runner, to show the runner checks catch it end to end. */
  runnerBug?: RunnerBug
  /**
   * LeasePool members per process (`@worklease/core`'s LeasePool over the recorded backend), joining,
   * leaving and rejoining; the nemesis kills and pauses them with their process. Default 0.
   */
  poolMembers?: number
  /** Units the pool members share that no handler finishes. Default 6. */
  poolUnits?: number
  /**
   * Units besides those that a handler run may finish (a third of their runs do, after 1 to 5 steps),
   * so done marks are set and judged. Default 2.
   */
  poolFinishingUnits?: number
  /** Turns the nemesis off (a baseline run). */
  faults?: boolean
  /**
   * The network lane's fault kinds to pick from (default: all). A test after one kind of bug narrows it
   * to the fault that exposes it, so a few seconds are enough.
   */
  networkFaults?: readonly NetworkFault[]
  /** The process lane's fault kinds to pick from (default: all that apply), narrowed the same way. */
  processFaults?: readonly ProcessFault[]
  log?: (line: string) => void
}

export interface TortureReport {
  backend: BackendName
  seed: number
  durationMs: number
  elapsedMs: number
  histories: number
  operations: number
  byOutcome: Record<'ok' | 'fail' | 'info', number>
  byOperation: Record<string, number>
  faults: Record<string, number>
  /**
   * How the host's wall clock moved against its monotonic one during the run. The checker counts it
   * as clock offset; the report says so, since a step ends leases on a store's clock early or late.
   */
  hostClock: HostClockMoves
  violations: Violation[]
  violationsByCheck: Partial<Record<CheckName, number>>
  /** Non-empty when the server is known not to make cross-connection writes atomic. */
  notAtomic?: string
  noRestart?: string
  counter: {
    fenced: { value: number; acknowledged: number; expected: number; finished: boolean }
    unfenced: { value: number; acknowledged: number; expected: number; finished: boolean }
  }
  runner: RunnerSummary & {
    /** The runner jobs' fenced counters: their sum must equal the writes that landed. */
    counter: { value: number; acknowledged: number }
    leases: RunnerLeaseConfig[]
  }
  /** The pool workload (when poolMembers > 0). */
  pool: PoolSummary & { members: number; units: number }
  /** The history slice printed for each violation (first few). */
  slices: string[]
  ops: Op[]
  dir: string
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** One torture run against one backend: workers, nemesis, then the checker. */
export async function runTorture(options: TortureOptions): Promise<TortureReport> {
  const log = options.log ?? (() => {})
  const processes = options.processes ?? 5
  const counterWorkers = options.counterWorkers ?? 50
  const increments = options.increments ?? 10
  const shards = options.counterShards ?? 5
  const faultsOn = options.faults ?? true
  const dir = mkdtempSync(join(tmpdir(), `worklease-torture-${options.backend}-`))
  const historyDir = join(dir, 'history')
  mkdirSync(historyDir)

  const { server, info: partialInfo } = await startServer(options.backend, dir, options.bug)
  const clientClock = clockOf(options.backend) === 'client'
  let proxy: FaultProxy | undefined
  if (server.port > 0) {
    proxy = new FaultProxy(server.port)
    await proxy.listen()
  }
  const info: TargetInfo = {
    ...partialInfo,
    port: proxy?.port ?? 0,
    ...(options.connections ? { connections: options.connections } : {}),
  }

  const specs: CounterWorkerSpec[] = []
  for (const mode of ['fenced', 'unfenced'] as const) {
    for (let i = 0; i < counterWorkers; i++) {
      specs.push({ name: `${mode}-w${i}`, mode, counter: `counter-${mode}-${i % shards}` })
    }
  }
  const runnerWorkers = options.runnerWorkers ?? 2
  const runnerWorkIds = Array.from({ length: options.runnerWorkIds ?? 3 }, (_, i) => `job-${i}`)
  // On a client-clock backend the margin must cover the injected offsets (up to 800 ms apart); the
  // 1 to 3 s jumps go beyond it on purpose, and the checker counts what they cause apart.
  const runnerLeases: RunnerLeaseConfig[] = clientClock
    ? [{ ttlMs: 2_000, safetyMarginMs: 900 }]
    : [
        { ttlMs: 400, safetyMarginMs: 40 },
        { ttlMs: 2_000, safetyMarginMs: 200 },
      ]
  const counterFile = join(dir, 'counter.db')
  CounterStore.create(
    counterFile,
    [...new Set(specs.map((s) => s.counter)), ...runnerWorkIds.map(runnerCounter)],
    [
      ...specs.map((s) => s.name),
      ...Array.from({ length: processes * runnerWorkers }, (_, i) =>
        runnerProgress(Math.floor(i / runnerWorkers), i % runnerWorkers),
      ),
    ],
  )

  const clockReference = hostClockReference()
  const clockWatch = new HostClockWatch(clockReference)
  const fleet = new WorkerFleet((index, incarnation, registerStopped) => ({
    info,
    slot: index,
    incarnation,
    seed: options.seed,
    historyDir,
    counterFile,
    registerWorkers: registerStopped ? 0 : (options.registerWorkers ?? 3),
    workIds: Array.from({ length: options.workIds ?? 3 }, (_, i) => `reg-${i}`),
    ttls: options.ttls ?? [200, 2000],
    opTimeoutMs: 1_000,
    counterWorkers: specs.filter((_, i) => i % processes === index),
    increments,
    counterTtlMs: 200,
    slowWorkChance: 0.05,
    runnerWorkers,
    runnerWorkIds,
    runnerLeases,
    ...(options.runnerBug ? { runnerBug: options.runnerBug } : {}),
    poolMembers: options.poolMembers ?? 0,
    poolUnits: poolUnitIds(options.poolUnits ?? 6, options.poolFinishingUnits ?? 2),
    clockReference,
  }))
  const nemesis = new Nemesis(options.seed, {
    proxy,
    server,
    fleet,
    clientClock,
    ...(options.networkFaults ? { networkFaults: options.networkFaults } : {}),
    ...(options.processFaults ? { processFaults: options.processFaults } : {}),
  })

  const started = Date.now()
  const cleanup = () => fleet.kill()
  process.once('exit', cleanup)
  let report: TortureReport | undefined
  try {
    await fleet.start(processes)
    log(`${options.backend}: ${processes} workers up (${Date.now() - started} ms); seed ${options.seed}`)
    const t0 = Date.now()
    const counterStore = new CounterStore(counterFile)
    const countersDone = () =>
      counterStore.totals('fenced').acknowledged >= counterWorkers * increments &&
      counterStore.totals('unfenced').acknowledged >= counterWorkers * increments
    const deadline = t0 + options.durationMs + (options.counterGraceMs ?? 120_000)
    const running = () =>
      !fleet.error && Date.now() < deadline && (Date.now() - t0 < options.durationMs || !countersDone())

    // The random-operation workload ends after durationMs; the counter workload runs on to completion.
    const stopRegisterAt = async () => {
      while (Date.now() - t0 < options.durationMs && !fleet.error) await sleep(50)
      fleet.stopRegister()
    }
    await Promise.all([
      faultsOn
        ? nemesis.run(running)
        : (async () => {
            while (running()) await sleep(100)
          })(),
      stopRegisterAt(),
    ])
    if (fleet.error) throw new Error(fleet.error)

    // Heal everything, then let the workers finish their in-flight operations and exit.
    nemesis.heal()
    await fleet.stop()
    const elapsedMs = Date.now() - t0
    const faults = nemesis.faults
    const hostClock = clockWatch.stop()

    const fenced = counterStore.totals('fenced')
    const unfenced = counterStore.totals('unfenced')
    const runnerCounterTotals = counterStore.totals('runner')
    counterStore.close()
    // What only the coordinator knows, next to the histories, before the (long) check: a kept run can
    // then be re-checked with `--check` and still report its faults and counters.
    writeFileSync(
      join(dir, 'run.json'),
      `${JSON.stringify(
        {
          backend: options.backend,
          seed: options.seed,
          durationMs: options.durationMs,
          elapsedMs,
          faults,
          hostClock,
          counter: { fenced, unfenced, runner: runnerCounterTotals },
        },
        null,
        2,
      )}\n`,
    )
    const {
      ops,
      violations,
      violationsByCheck,
      runner: runnerChecked,
      pool: poolChecked,
    } = checkRun(historyDir)
    const byOutcome = { ok: 0, fail: 0, info: 0 }
    const byOperation: Record<string, number> = {}
    for (const op of ops) {
      byOutcome[op.outcome]++
      byOperation[op.op] = (byOperation[op.op] ?? 0) + 1
      // acquireWithCheckpoint: an acquire that read, judged as a read too.
      if (op.op === 'acquire' && isRead(op)) {
        byOperation['acquire that read'] = (byOperation['acquire that read'] ?? 0) + 1
      }
    }
    const expected = counterWorkers * increments
    report = {
      backend: options.backend,
      seed: options.seed,
      durationMs: options.durationMs,
      elapsedMs,
      histories: new Set(ops.map((op) => op.workId)).size,
      operations: ops.length,
      byOutcome,
      byOperation,
      faults,
      hostClock,
      violations,
      violationsByCheck,
      ...(server.notAtomic ? { notAtomic: server.notAtomic } : {}),
      ...(server.noRestart ? { noRestart: server.noRestart } : {}),
      counter: {
        fenced: { ...fenced, expected, finished: fenced.acknowledged >= expected },
        unfenced: { ...unfenced, expected, finished: unfenced.acknowledged >= expected },
      },
      runner: { ...runnerChecked, counter: runnerCounterTotals, leases: runnerLeases },
      pool: {
        ...poolChecked,
        members: processes * (options.poolMembers ?? 0),
        units: (options.poolUnits ?? 6) + (options.poolFinishingUnits ?? 2),
      },
      slices: violations
        .slice(0, 5)
        .map((v) => `${v.check} on ${v.workId}: ${v.message}\n${historySlice(ops, v)}`),
      ops,
      dir,
    }
    return report
  } catch (error) {
    // Whatever broke the run itself (a worker that cannot start, a server that does not come back)
    // is reported with the seed too.
    throw new Error(
      `${options.backend} seed=${options.seed}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    )
  } finally {
    clockWatch.stop()
    fleet.kill()
    process.removeListener('exit', cleanup)
    await proxy?.close()
    await server.stop().catch(() => undefined)
    if (report && !failed(report) && !process.env.WORKLEASE_TORTURE_KEEP) {
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** Every check, on the history files of one run: every recorded op, then the runners' and the pools' claims. */
function checkRun(historyDir: string) {
  const ops = loadHistory(historyDir)
  // Nothing recorded is nothing judged: a pass of an empty history would say a run held that never ran.
  if (ops.length === 0)
    throw new Error(`${historyDir}: the history holds no operation, so nothing was judged`)
  const runner = checkRunner(loadRunnerLog(historyDir), ops)
  const pool = checkPool(PoolLog.load(historyDir), ops)
  const violations = [...checkHistory(ops), ...runner.violations, ...pool.violations]
  const violationsByCheck: Partial<Record<CheckName, number>> = {}
  for (const v of violations) violationsByCheck[v.check] = (violationsByCheck[v.check] ?? 0) + 1
  return { ops, violations, violationsByCheck, runner: runner.summary, pool: pool.summary }
}

/**
 * Checks the history files a run kept (`history` under the directory it printed) again, with this
 * version of the checker: for a run whose violations turn out to be the checker's.
 */
export function recheck(historyDir: string): { violations: Violation[]; summary: string } {
  const meta = join(historyDir, '..', 'run.json')
  const run = existsSync(meta)
    ? readFileSync(meta, 'utf8').trim()
    : '(no run.json: faults and counters unknown)'
  const { ops, violations, violationsByCheck, runner, pool } = checkRun(historyDir)
  const summary = [
    run,
    `runner: ${JSON.stringify(runner)}`,
    `pool: ${JSON.stringify(pool)}`,
    `${historyDir}: ${ops.length} operations, ${violations.length} violations${
      violations.length
        ? ` (${Object.entries(violationsByCheck)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')})`
        : ''
    }`,
    ...violations.slice(0, 5).map((v) => `${v.check} on ${v.workId}: ${v.message}\n${historySlice(ops, v)}`),
  ].join('\n')
  return { violations, summary }
}

export function isCounterViolation(report: TortureReport): boolean {
  const { fenced } = report.counter
  const runner = report.runner.counter
  return fenced.value !== fenced.acknowledged || !fenced.finished || runner.value !== runner.acknowledged
}

/** Whether the run breached the contract (violations, or a fenced counter that is not exact). */
export function failed(report: TortureReport): boolean {
  return report.violations.length > 0 || isCounterViolation(report)
}

/** How the host's wall clock moved against its monotonic one, for a report. */
export function describeHostClock({ least, most, largestStep, largestStepAt }: HostClockMoves): string {
  const ms = (value: number) => `${value > 0 ? '+' : ''}${value.toFixed(1)} ms`
  const moved = `wall clock against monotonic ${ms(least)} to ${ms(most)}`
  // Sampled every 100 ms; the two clocks' readings differ by up to a millisecond of rounding.
  if (Math.abs(largestStep) < 5) return `${moved}, no step`
  return `${moved}; stepped ${ms(largestStep)} at ${(largestStepAt / 1000).toFixed(1)} s (counted as clock offset by the checker)`
}

/** A human summary of a run, with the seed and the history slice of each violation. */
export function formatReport(report: TortureReport): string {
  const lines: string[] = []
  const { fenced, unfenced } = report.counter
  lines.push(
    `== ${report.backend}  seed=${report.seed}  ran ${(report.elapsedMs / 1000).toFixed(1)} s (workload ${(report.durationMs / 1000).toFixed(0)} s)`,
  )
  lines.push(
    `   histories (workIds): ${report.histories}   operations: ${report.operations}  (ok ${report.byOutcome.ok}, fail ${report.byOutcome.fail}, indeterminate ${report.byOutcome.info})`,
  )
  lines.push(
    `   by operation: ${Object.entries(report.byOperation)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  )
  lines.push(
    `   faults: ${
      Object.entries(report.faults)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none'
    }`,
  )
  lines.push(`   host clock: ${describeHostClock(report.hostClock)}`)
  if (report.noRestart) lines.push(`   no server restarts: ${report.noRestart}`)
  lines.push(
    `   fenced counter:   ${fenced.value} (acknowledged increments ${fenced.acknowledged}, expected ${fenced.expected})${fenced.value === fenced.acknowledged && fenced.finished ? ' OK' : ' VIOLATION'}`,
  )
  const lost = unfenced.acknowledged - unfenced.value
  lines.push(
    `   unfenced control: ${unfenced.value} (acknowledged ${unfenced.acknowledged}): ${lost > 0 ? `${lost} acknowledged increments lost` : lost < 0 ? `${-lost} duplicated` : 'no anomaly this run'}`,
  )
  const { runner } = report
  lines.push(
    `   runner (Leaser.run; ${runner.leases.map((l) => `ttl ${l.ttlMs} / margin ${l.safetyMarginMs}`).join(', ')}): runs ${
      Object.entries(runner.runs)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none'
    }; lease.held asked ${runner.beliefs} times (yes ${runner.heldBeliefs})${
      runner.wrongBeliefsBeyondMargin
        ? `, ${runner.wrongBeliefsBeyondMargin} yes after a takeover with clock skew beyond the margin`
        : ''
    }`,
  )
  lines.push(
    `   runner counter:   ${runner.counter.value} (fenced writes landed ${runner.counter.acknowledged}, refused by the fence ${runner.refusedByFence})${runner.counter.value === runner.counter.acknowledged ? ' OK' : ' VIOLATION'}`,
  )
  const { pool } = report
  if (pool.members > 0) {
    lines.push(
      `   pool (${pool.members} member slots, ${pool.units} units): joined ${pool.joined}, left ${pool.left}; handler runs ${pool.runs}, lease.held asked ${pool.steps} (yes ${pool.heldSteps}); handoffs by consent ${pool.handoffs}; units lost ${pool.lostUnits}; finished ${pool.finished} (reported done ${pool.done})${
        pool.overlapsBeyondMargin
          ? `; ${pool.overlapsBeyondMargin} overlaps after a takeover with clock skew beyond the margin`
          : ''
      }`,
    )
  }
  const checks = Object.entries(report.violationsByCheck)
  lines.push(
    `   violations: ${report.violations.length}${checks.length ? ` (${checks.map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}`,
  )
  if (report.notAtomic && report.violations.length > 0) {
    lines.push(
      `   server not atomic: ${report.notAtomic}; these violations are the server's, reported, not hidden`,
    )
  }
  for (const slice of report.slices) lines.push(slice.replace(/^/gm, '     '))
  if (report.violations.length > 0 || isCounterViolation(report)) {
    lines.push(
      `   replay: pnpm torture --backend ${report.backend} --seconds ${Math.round(report.durationMs / 1000)} --seed ${report.seed}`,
    )
    lines.push(`   history files kept in ${report.dir}`)
  }
  return lines.join('\n')
}
