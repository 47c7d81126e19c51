// `pnpm demo`: worker processes share a batch of items under worklease leases while the coordinator
// kills one, pauses another past its ttl and stops a third gracefully; an audit decides the exit code.
import { isLeaseHeldError } from '@worklease/spec'
import { audit, type Check, type FinalItem, formatAudit } from './audit.js'
import { auditPool } from './audit-pool.js'
import { Coordinator } from './coordinator.js'
import { type DemoOptions, HELP, parseOptions } from './options.js'
import { PoolCoordinator } from './pool-coordinator.js'
import { PoolLiveView } from './pool-live-view.js'
import { DEMO_POOL_GROUP } from './pool-protocol.js'
import { poolSummary } from './pool-summary.js'
import { openStores, type RunStores, setupStores } from './stores.js'
import { LiveView, PlainView, type View } from './view.js'

const out = (text: string) => process.stdout.write(text)

/** Reads every item back through the lease store: acquire (the workers are gone), read, release. */
async function readBack(stores: RunStores, items: string[], options: DemoOptions): Promise<FinalItem[]> {
  const { backend, close } = await openStores(stores.spec, true, stores.memoryStore)
  try {
    const final: FinalItem[] = []
    for (const item of items) {
      try {
        // A pool keeps each item's lease under its group's prefix.
        const workId = options.pool ? `${DEMO_POOL_GROUP}/u/${item}` : item
        const record = await backend.acquire(workId, 'demo-auditor', options.ttlMs)
        const { state } = await backend.readCheckpoint(record)
        await backend.release(record)
        const stepsDone = state ? Number(new TextDecoder().decode(state)) : 0
        final.push({ item, stepsDone, token: record.fencingToken })
      } catch (error) {
        const why = isLeaseHeldError(error) ? 'still held' : (error as Error).message
        final.push({ item, stepsDone: undefined, token: undefined, error: why })
      }
    }
    return final
  } finally {
    await close()
  }
}

async function main(): Promise<number> {
  let options: DemoOptions
  try {
    options = parseOptions(process.argv.slice(2))
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`)
    return 2
  }
  if (options.help) {
    out(`${HELP}\n`)
    return 0
  }
  const live = options.live === 'on' || (options.live === 'auto' && process.stdout.isTTY === true)
  const items = Array.from({ length: options.items }, (_, i) => `item-${String(i + 1).padStart(2, '0')}`)
  const title =
    `worklease demo${options.pool ? ' --pool' : ''}: ${options.backend}, ${options.workers} workers, ${options.items} items × ${options.steps} steps, ` +
    `ttl ${options.ttlMs} ms, seed ${options.seed}${options.fence ? '' : ', NO FENCE'}`
  out(`${title}\n`)

  const started = performance.now()
  const stores = await setupStores(options.backend, items, (line) => out(`${line}\n`), options.keep)
  let exitCode = 1
  try {
    out(`store: ${stores.description}\n`)
    if (!options.fence)
      out('--no-fence: workers write downstream without the token guard; the audit should FAIL\n')
    if (options.pool) {
      const checks = await runPool(options, stores, items, live, title)
      exitCode = checks.every((check) => check.pass) ? 0 : 1
    } else {
      const view: View = live ? new LiveView(process.stdout, options, title) : new PlainView(out)
      const coordinator = new Coordinator({
        demo: options,
        spec: stores.spec,
        items,
        memoryStore: stores.memoryStore,
        onLine: (line) => view.line(line),
      })
      // Ctrl-C: stop the workers and clean up instead of leaving processes and tables behind.
      const interrupt = () => {
        out('\ninterrupted: stopping the workers and cleaning up\n')
        coordinator.killAll()
        stores.teardown().finally(() => process.exit(130))
      }
      process.once('SIGINT', interrupt)
      view.start(coordinator)
      const outcome = await coordinator.run()
      view.stop()
      process.removeListener('SIGINT', interrupt)

      const final = await readBack(stores, items, options)
      const { downstream, close } = await openStores(stores.spec, true, stores.memoryStore)
      const histories = await downstream.histories().finally(close)
      const checks = audit({ steps: options.steps, outcome, final, histories })
      for (const failure of outcome.failures) process.stderr.write(`${failure}\n`)
      out(`\n${formatAudit(checks, { color: live, width: live ? process.stdout.columns : undefined })}\n`)
      exitCode = checks.every((check) => check.pass) ? 0 : 1
    }
  } finally {
    await stores.teardown()
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1)
  if (stores.kept) {
    out(`done in ${seconds} s; tables kept (--keep). The leases, as the worklease command line sees them:\n`)
    out(`  npx worklease list --store ${stores.kept.store} --table ${stores.kept.table}\n`)
  } else {
    out(`done in ${seconds} s; tables dropped, temp files removed\n`)
  }
  return exitCode
}

/** `--pool`: the LeasePool run, its view (with a summary line each second when plain), and its audit. */
async function runPool(
  options: DemoOptions,
  stores: RunStores,
  items: string[],
  live: boolean,
  title: string,
): Promise<Check[]> {
  const view = live ? new PoolLiveView(process.stdout, title) : new PlainView(out)
  const coordinator = new PoolCoordinator({
    demo: options,
    spec: stores.spec,
    items,
    onLine: (line) => view.line(line),
  })
  const interrupt = () => {
    out('\ninterrupted: stopping the workers and cleaning up\n')
    coordinator.killAll()
    stores.teardown().finally(() => process.exit(130))
  }
  process.once('SIGINT', interrupt)
  let summary: ReturnType<typeof setInterval> | undefined
  if (view instanceof PoolLiveView) view.start(coordinator)
  else {
    summary = setInterval(
      () =>
        view.line({
          at: coordinator.elapsed(),
          text: `pool: ${poolSummary(coordinator.state)}`,
          important: false,
        }),
      1_000,
    )
  }
  const outcome = await coordinator.run()
  clearInterval(summary)
  if (view instanceof PoolLiveView) view.stop()
  else
    view.line({
      at: coordinator.elapsed(),
      text: `pool: ${poolSummary(coordinator.state)}`,
      important: false,
    })
  process.removeListener('SIGINT', interrupt)
  const final = await readBack(stores, items, options)
  const { downstream, close } = await openStores(stores.spec, true, stores.memoryStore)
  const histories = await downstream.histories().finally(close)
  const checks = auditPool({ steps: options.steps, outcome, final, histories })
  for (const failure of outcome.state.failures) process.stderr.write(`${failure}\n`)
  out(`\n${formatAudit(checks, { color: live, width: live ? process.stdout.columns : undefined })}\n`)
  return checks
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exit(1)
  },
)
