import { PerformanceObserver } from 'node:perf_hooks'

/**
 * Runs `run` and adds up the time this process spent in garbage collection meanwhile (every kind:
 * scavenges and full collections). Node.js reports each collection after the fact, so the total is
 * read once the entries of the run's last collections have come in.
 *
 * ```ts
 * const { value: cycles, gcMs } = await withGcTime(() => runLockCycles(side, load))
 * ```
 */
export async function withGcTime<T>(run: () => Promise<T>): Promise<{ value: T; gcMs: number }> {
  let gcMs = 0
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration
  })
  observer.observe({ entryTypes: ['gc'] })
  try {
    const value = await run()
    for (const entry of observer.takeRecords()) gcMs += entry.duration
    return { value, gcMs }
  } finally {
    observer.disconnect()
  }
}
