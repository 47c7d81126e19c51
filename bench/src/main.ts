import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { measureContention } from './contention.js'
import { describeMachine } from './machine.js'
import { parseOptions } from './options.js'
import { renderMarkdown } from './report.js'
import type { BackendResult, BenchResults } from './results.js'
import { countRoundTrips } from './round-trips.js'
import { measureRunnerCost } from './runner-cost.js'
import { median, round } from './stats.js'
import type { BackendName, Target } from './target.js'
import { openDynamoTarget } from './targets/dynamo-target.js'
import { openMemoryTarget } from './targets/memory-target.js'
import { openMongoTarget } from './targets/mongo-target.js'
import { openMariadbTarget, openPostgresTarget, openSqliteTarget } from './targets/sql-target.js'
import { measureThroughput, type ThroughputSettings } from './throughput.js'

const log = (line: string) => console.error(line)
const options = parseOptions(process.argv.slice(2))
const started = performance.now()
const startedAt = new Date().toISOString()
const machine = describeMachine()

const settings: ThroughputSettings = {
  concurrencies: [1, 16],
  workIdCounts: [1, 1000],
  repetitions: options.quick ? 6 : 10,
  durationMs: options.quick ? 200 : 1_000,
  warmupMs: options.quick ? 800 : 2_000,
  ttlMs: 30_000,
  state: randomBytes(1024),
}
const contention = { acquirers: 64, rounds: options.quick ? 3 : 10 }
// Each contention acquirer gets its own connection where the server has room for 64 more; PostgreSQL's
// default max_connections (100) is shared with whatever else runs on the machine, so it gets 32.
const contentionPool = (name: BackendName) => (name === 'postgres' ? 32 : contention.acquirers)
const THROUGHPUT_POOL = 16

const openers: Record<BackendName, () => Promise<Target>> = {
  memory: openMemoryTarget,
  sqlite: openSqliteTarget,
  postgres: openPostgresTarget,
  mariadb: openMariadbTarget,
  ferretdb: () => openMongoTarget(log),
  dynalite: openDynamoTarget,
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0]!

log(
  `worklease bench (${options.quick ? 'quick' : 'full'}): ${machine.cpuModel}, ${machine.cores} cores, Node ${machine.node}, load ${machine.loadAverageAtStart}`,
)
const backends: BackendResult[] = []
for (const name of options.backends) {
  log(`\n${name}`)
  let target: Target
  try {
    target = await openers[name]()
  } catch (error) {
    log(`  skipped: ${errorText(error)}`)
    backends.push({ name, skipped: errorText(error) })
    continue
  }
  log(`  ${target.server} (${target.origin})`)
  const notes = [
    ...target.notes,
    `throughput pool ${THROUGHPUT_POOL}, contention pool ${contentionPool(name)} (where the client pools)`,
  ]
  const result: { -readonly [K in keyof BackendResult]: BackendResult[K] } = {
    name,
    server: target.server,
    origin: target.origin,
    notes,
  }
  try {
    const session = await target.open(THROUGHPUT_POOL)
    try {
      result.roundTrips = await countRoundTrips(session)
      result.throughput = await measureThroughput(session, settings, log)
      const cellRatios = result.throughput.map((cell) => cell.ratio.median)
      result.ratio = {
        median: round(median(cellRatios)),
        min: Math.min(...cellRatios),
        max: Math.max(...cellRatios),
      }
    } finally {
      await session.close()
    }
    const wide = await target.open(contentionPool(name))
    try {
      const prefix = randomBytes(3).toString('hex')
      const races = []
      for (const kind of ['new', 'released'] as const) {
        const race = await measureContention(wide, { ...contention, prefix, kind })
        log(
          `  contention (${kind} workId): winners ${race.winners.join(',')}, settle ${race.settleMs.median} ms, ` +
            `${race.roundTripsPerLoser} round trips per loser`,
        )
        races.push(race)
      }
      result.contention = races
    } finally {
      await wide.close()
    }
  } catch (error) {
    log(`  failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
    result.error = errorText(error)
  } finally {
    await target.close().catch((error: unknown) => log(`  close failed: ${errorText(error)}`))
  }
  backends.push(result)
}

const runnerCost: BenchResults['runnerCost'][number][] = []
for (const backend of options.runnerCost) {
  log(`\nrunner cost: ${backend}, 10,000 leases`)
  try {
    const measured = await measureRunnerCost({
      backend,
      leases: 10_000,
      ttlMs: 30_000,
      // Shorter than the default ttl/3 so the window holds several renewal rounds and the expected
      // rate is exact; the report also projects CPU to the default interval.
      renewIntervalMs: 2_000,
      renewJitter: 0.2,
      warmupMs: options.quick ? 3_000 : 4_000,
      windowMs: options.quick ? 6_000 : 15_000,
    })
    log(
      `  ${measured.renewalsPerSecond} renewals/s (expected ${measured.expectedRenewalsPerSecond}), CPU ${measured.cpuPercent}%, heap ${measured.heapUsedMiB} MiB`,
    )
    runnerCost.push(measured)
  } catch (error) {
    log(`  failed: ${errorText(error)}`)
    runnerCost.push({ backend, error: errorText(error) })
  }
}

const { state, ...rest } = settings
const results: BenchResults = {
  mode: options.quick ? 'quick' : 'full',
  startedAt,
  durationSeconds: Math.round((performance.now() - started) / 100) / 10,
  machine,
  settings: {
    ...rest,
    stateBytes: state.byteLength,
    contentionAcquirers: contention.acquirers,
    contentionRounds: contention.rounds,
  },
  backends,
  runnerCost,
}
const markdown = renderMarkdown(results)
const outDir = options.outDir ?? fileURLToPath(new URL('../results/', import.meta.url))
mkdirSync(outDir, { recursive: true })
writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`)
writeFileSync(join(outDir, 'latest.md'), markdown)
console.log(markdown)
log(`wrote ${join(outDir, 'latest.json')} and latest.md in ${results.durationSeconds} s`)
