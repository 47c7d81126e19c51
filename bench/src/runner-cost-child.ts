// One process holding many leases through @worklease/core's Leaser, measuring its own CPU and memory.
// Run by runner-cost.ts in a fresh process (so nothing else the benchmark did is in the numbers):
//   node --expose-gc --import tsx src/runner-cost-child.ts '<json RunnerCostConfig>'
// Prints one JSON line: RunnerCostSample.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Leaser } from '@worklease/core'
import { createLeaseTable, KyselyBackend } from '@worklease/kysely'
import { MemoryBackend } from '@worklease/memory'
import type { Backend } from '@worklease/spec'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import type { RunnerCostConfig, RunnerCostSample } from './runner-cost.js'

const config = JSON.parse(process.argv[2] ?? '{}') as RunnerCostConfig
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined)

async function openBackend(): Promise<{ backend: Backend; cleanup(): void }> {
  if (config.backend === 'memory') return { backend: new MemoryBackend(), cleanup: () => undefined }
  const dir = mkdtempSync(join(tmpdir(), 'worklease-bench-runner-'))
  const database = new Database(join(dir, 'leases.db'), { timeout: 5_000 })
  database.pragma('journal_mode = WAL')
  const db = new Kysely<any>({ dialect: new SqliteDialect({ database }) })
  await createLeaseTable(db)
  return {
    backend: new KyselyBackend({ db }),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}

const { backend, cleanup } = await openBackend()
gc()
const before = process.memoryUsage()
const leaser = new Leaser({
  backend,
  ttlMs: config.ttlMs,
  renewIntervalMs: config.renewIntervalMs,
  renewJitter: config.renewJitter,
  holderId: 'bench-runner',
})
let renewals = 0
let lost = 0
let renewFailures = 0
leaser.on('renewed', (event) => {
  if (event.op === 'renew') renewals++
})
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
for (let index = 0; index < config.leases; index++) {
  const due = acquireStarted + index * paceMs
  const wait = due - performance.now()
  if (wait > 1) await sleep(wait)
  pending.push(leaser.acquire(`work-${index}`))
}
await Promise.all(pending)
const acquireMs = performance.now() - acquireStarted

await sleep(config.warmupMs)
gc()
const held = leaser.leases.length
const memory = process.memoryUsage()
const renewalsBefore = renewals
const cpuBefore = process.cpuUsage()
const windowStarted = performance.now()
await sleep(config.windowMs)
const cpu = process.cpuUsage(cpuBefore)
const windowMs = performance.now() - windowStarted
const windowRenewals = renewals - renewalsBefore
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
  rssMiB: memory.rss / 2 ** 20,
  heapUsedMiB: memory.heapUsed / 2 ** 20,
  heapBytesPerLease: (memory.heapUsed - before.heapUsed) / config.leases,
  rssBytesPerLease: (memory.rss - before.rss) / config.leases,
}
process.stdout.write(`${JSON.stringify(sample)}\n`)
// No graceful close: releasing 10,000 leases is not what is measured, and the store goes away with us.
cleanup()
process.exit(0)
