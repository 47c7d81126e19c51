// One process holding many leases through @worklease/core's Leaser, measuring its own CPU and memory.
// Run by runner-cost.ts in a fresh process (so nothing else the benchmark did is in the numbers):
//   node --expose-gc --import tsx src/runner-cost-child.ts '<json RunnerCostConfig>'
// Prints one JSON line: RunnerCostSample.
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { Agent } from 'node:http'
import { Session } from 'node:inspector/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { Leaser } from '@worklease/core'
import { createLeaseTable as createDynamoTable, DynamoBackend } from '@worklease/dynamodb'
import { createLeaseTable, dropLeaseTable, KyselyBackend } from '@worklease/kysely'
import { MemoryBackend, MemoryStore } from '@worklease/memory'
import { createLeaseCollection, MongoBackend } from '@worklease/mongodb'
import type { Backend } from '@worklease/spec'
import Database from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import { MongoClient } from 'mongodb'
import pg from 'pg'
import { ferretdb1Version } from './is-ferretdb1.js'
import { countMongoCommands } from './peers/counting.js'
import type { RunnerCostConfig, RunnerCostSample } from './runner-cost.js'

const config = JSON.parse(process.argv[2] ?? '{}') as RunnerCostConfig
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined)
// Connections for renewals: as many as the throughput section's pool.
const POOL = 16

interface Opened {
  backend: Backend
  roundTrips(): number
  cleanup(): Promise<void>
}

async function openBackend(): Promise<Opened> {
  const run = randomBytes(4).toString('hex')
  switch (config.backend) {
    case 'memory': {
      const store = new MemoryStore()
      return {
        backend: new MemoryBackend({ store }),
        roundTrips: () => store.operations,
        cleanup: async () => {},
      }
    }
    case 'sqlite': {
      const dir = mkdtempSync(join(tmpdir(), 'worklease-bench-runner-'))
      const database = new Database(join(dir, 'leases.db'), { timeout: 5_000 })
      database.pragma('journal_mode = WAL')
      let statements = 0
      const db = new Kysely<any>({ dialect: new SqliteDialect({ database }), log: () => void statements++ })
      await createLeaseTable(db)
      return {
        backend: new KyselyBackend({ db }),
        roundTrips: () => statements,
        cleanup: async () => rmSync(dir, { recursive: true, force: true }),
      }
    }
    case 'postgres': {
      let statements = 0
      const db = new Kysely<any>({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: config.url, max: POOL }) }),
        log: () => void statements++,
      })
      const table = `bench_runner_${run}`
      await createLeaseTable(db, { table, dialect: 'postgres' })
      const before = statements
      return {
        backend: new KyselyBackend({ db, table, dialect: 'postgres' }),
        roundTrips: () => statements - before,
        cleanup: async () => {
          await dropLeaseTable(db, { table, dialect: 'postgres' })
          await db.destroy()
        },
      }
    }
    case 'dynamodb': {
      const client = new DynamoDBClient({
        endpoint: config.url!,
        region: 'us-east-1',
        credentials: { accessKeyId: 'worklease', secretAccessKey: 'worklease' },
        requestHandler: { httpAgent: new Agent({ keepAlive: true, maxSockets: POOL }) },
      })
      let requests = 0
      client.middlewareStack.add(
        (next) => (args) => {
          requests++
          return next(args)
        },
        { step: 'finalizeRequest', priority: 'low', name: 'worklease-bench-request-count' },
      )
      const tableName = `bench-runner-${randomUUID()}`
      await createDynamoTable(client, { table: tableName })
      const before = requests
      return {
        backend: new DynamoBackend({
          client,
          table: tableName,
          returnValuesOnConditionCheckFailure: !config.dynalite,
          renewMany: !config.dynalite,
        }),
        roundTrips: () => requests - before,
        cleanup: async () => {
          await client.send(new DeleteTableCommand({ TableName: tableName })).catch(() => undefined)
          client.destroy()
        },
      }
    }
    case 'ferretdb': {
      const client = new MongoClient(config.url!, { monitorCommands: true, maxPoolSize: POOL })
      const count = countMongoCommands(client)
      await client.connect()
      const info = await client.db('admin').command({ buildInfo: 1 })
      const ferret1 = ferretdb1Version(info) !== undefined
      const db = client.db('worklease_bench')
      const name = `runner_${run}`
      await createLeaseCollection(db, { collection: name })
      const before = count()
      return {
        backend: new MongoBackend({
          collection: db.collection(name),
          ...(ferret1
            ? {
                findAndModifyProjection: false,
                crossConnectionAtomic: false,
                crossConnectionAtomicNote: 'FerretDB 1.x: findAndModify is a read then a write',
              }
            : {}),
        }),
        roundTrips: () => count() - before,
        cleanup: async () => {
          await db
            .collection(name)
            .drop()
            .catch(() => undefined)
          await client.close()
        },
      }
    }
  }
}

/** The backend without renewMany: what the Leaser did before it existed, one round trip per renewal. */
function singleRenewals(inner: Backend): Backend {
  const { renewMany: _, ...capabilities } = inner.capabilities
  return {
    capabilities,
    acquire: (...args) => inner.acquire(...args),
    checkpoint: (...args) => inner.checkpoint(...args),
    renew: (...args) => inner.renew(...args),
    release: (...args) => inner.release(...args),
    readCheckpoint: (...args) => inner.readCheckpoint(...args),
  }
}

/**
 * Counts renewals as the backend reports them. A `renewed` listener would cost an event object per
 * renewal (more than the rest of a batched renewal), which a process holding many leases need not
 * pay and the measurement should not add.
 */
function countRenewals(backend: Backend): void {
  const renew = backend.renew.bind(backend)
  backend.renew = async (...args) => {
    const renewed = await renew(...args)
    renewals++
    return renewed
  }
  const renewMany = backend.renewMany?.bind(backend)
  if (renewMany === undefined) return
  backend.renewMany = async (...args) => {
    const outcomes = await renewMany(...args)
    for (const outcome of outcomes) if (outcome === 'renewed') renewals++
    return outcomes
  }
}

/**
 * Profiles of the measured window, each written where its variable says: a CPU profile
 * (`.cpuprofile`), and a sampling heap profile (`.heapprofile`) that keeps objects the garbage
 * collector freed, so it shows what the window allocated (its churn), not what it retained.
 */
async function startProfiles(files: { cpu?: string | undefined; heap?: string | undefined }) {
  if (!files.cpu && !files.heap) return undefined
  const session = new Session()
  session.connect()
  if (files.cpu) {
    await session.post('Profiler.enable')
    await session.post('Profiler.start')
  }
  if (files.heap) {
    await session.post('HeapProfiler.enable')
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 4_096,
      includeObjectsCollectedByMinorGC: true,
      includeObjectsCollectedByMajorGC: true,
    })
  }
  return {
    stop: async () => {
      if (files.cpu) writeFileSync(files.cpu, JSON.stringify((await session.post('Profiler.stop')).profile))
      if (files.heap) {
        writeFileSync(files.heap, JSON.stringify((await session.post('HeapProfiler.stopSampling')).profile))
      }
      session.disconnect()
    },
  }
}

let renewals = 0
const opened = await openBackend()
const { roundTrips, cleanup } = opened
const backend = config.renewal === 'single' ? singleRenewals(opened.backend) : opened.backend
countRenewals(backend)
gc()
const before = process.memoryUsage()
const leaser = new Leaser({
  backend,
  ttlMs: config.ttlMs,
  renewIntervalMs: config.renewIntervalMs,
  renewJitter: config.renewJitter,
  holderId: 'bench-runner',
})
let acquireFailures = 0
let lost = 0
let renewFailures = 0
leaser.on('lost', () => {
  lost++
})
leaser.on('renewFailed', () => {
  renewFailures++
})

// Acquired at an even pace over one renew interval, as a fleet picking up work would, so renewals
// are spread evenly over the interval from the start and the measured rate is the steady one.
const acquireStarted = performance.now()
const paceMs = config.renewIntervalMs / config.leases
const pending: Promise<unknown>[] = []
if (config.seedConcurrency !== undefined) {
  // As fast as the store takes them, a bounded number in flight, so none waits past its timeout.
  let next = 0
  const worker = async () => {
    while (next < config.leases) {
      const index = next++
      await leaser.acquire(`work-${index}`).catch(() => {
        acquireFailures++
      })
    }
  }
  pending.push(...Array.from({ length: config.seedConcurrency }, worker))
}
for (let index = config.seedConcurrency === undefined ? 0 : config.leases; index < config.leases; index++) {
  const due = acquireStarted + index * paceMs
  const wait = due - performance.now()
  if (wait > 1) await sleep(wait)
  // A store that cannot keep up (FerretDB on a busy machine) times some acquires out: counted, and
  // the window measures the leases that were taken.
  pending.push(
    leaser.acquire(`work-${index}`).catch(() => {
      acquireFailures++
    }),
  )
}
await Promise.all(pending)
const acquireMs = performance.now() - acquireStarted

await sleep(config.warmupMs)
gc()
const held = leaser.leases.length
const memory = process.memoryUsage()
const renewalsBefore = renewals
const tripsBefore = roundTrips()
const cpuBefore = process.cpuUsage()
// WORKLEASE_BENCH_PROFILE=<file> (CPU) and WORKLEASE_BENCH_HEAP_PROFILE=<file> (allocation): profiles
// of the window alone (seeding left out), for DevTools; a per-lease child (batch renewal's baseline
// row) writes <file>.single, so it never overwrites a batched one.
const profileFileOf = (file: string | undefined) =>
  file && config.renewal === 'single' ? `${file}.single` : file
const profiler = await startProfiles({
  cpu: profileFileOf(process.env.WORKLEASE_BENCH_PROFILE),
  heap: profileFileOf(process.env.WORKLEASE_BENCH_HEAP_PROFILE),
})
const windowStarted = performance.now()
await sleep(config.windowMs)
const cpu = process.cpuUsage(cpuBefore)
await profiler?.stop()
const windowMs = performance.now() - windowStarted
const windowRenewals = renewals - renewalsBefore
const windowRoundTrips = roundTrips() - tripsBefore
const cpuMs = (cpu.user + cpu.system) / 1000

const sample: RunnerCostSample = {
  backend: config.backend,
  leases: config.leases,
  held,
  acquireMs,
  windowMs,
  cpuPercent: (100 * cpuMs) / windowMs,
  cpuMsPerRenewal: windowRenewals > 0 ? cpuMs / windowRenewals : Number.NaN,
  renewalsPerSecond: (windowRenewals * 1000) / windowMs,
  expectedRenewalsPerSecond: (config.leases * 1000) / (config.renewIntervalMs * (1 - config.renewJitter / 2)),
  lost,
  renewFailures,
  acquireFailures,
  windowRoundTrips,
  roundTripsPerRenewInterval: (windowRoundTrips * config.renewIntervalMs) / windowMs,
  roundTripsPerRenewal: windowRenewals > 0 ? windowRoundTrips / windowRenewals : Number.NaN,
  rssMiB: memory.rss / 2 ** 20,
  heapUsedMiB: memory.heapUsed / 2 ** 20,
  heapBytesPerLease: (memory.heapUsed - before.heapUsed) / config.leases,
  rssBytesPerLease: (memory.rss - before.rss) / config.leases,
}
process.stdout.write(`${JSON.stringify(sample)}\n`)
// No graceful close: releasing all leases is not what is measured. A server's table goes with cleanup.
await cleanup().catch(() => undefined)
process.exit(0)
