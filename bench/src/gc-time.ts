import { PerformanceObserver } from 'node:perf_hooks'

/**
 * Runs `run` and adds up the time this process spent in garbage collection meanwhile (every kind:
 * scavenges and full collections). Node.js queues each collection's entry for the next turn of the
 * event loop, so the total is read one turn after `run` settles.
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
    await new Promise<void>((resolve) => setImmediate(resolve))
    for (const entry of observer.takeRecords()) gcMs += entry.duration
    return { value, gcMs }
  } finally {
    observer.disconnect()
  }
}
