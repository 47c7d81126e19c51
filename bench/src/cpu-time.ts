import { readFileSync } from 'node:fs'

/**
 * CPU time the whole machine spent busy so far, in ms, from the first line of Linux's /proc/stat
 * (user, nice, system, irq and softirq over every core; softirq is where the kernel handles loopback
 * packets, so a store's network work is in it). `undefined` where there is no /proc/stat.
 */
export function machineBusyMs(): number | undefined {
  let stat: string
  try {
    stat = readFileSync('/proc/stat', 'utf8')
  } catch {
    return undefined
  }
  const fields = /^cpu\s+(.*)$/m.exec(stat)?.[1]?.trim().split(/\s+/).map(Number)
  if (!fields || fields.length < 7 || fields.some((field) => !Number.isFinite(field))) return undefined
  // Columns: user, nice, system, idle, iowait, irq, softirq. The kernel counts in USER_HZ ticks, 100 a
  // second on every Linux architecture Node.js runs on.
  const busy = [0, 1, 2, 5, 6].reduce((sum, column) => sum + fields[column]!, 0)
  return busy * 10
}

export interface CpuTime {
  /** This process's CPU time (user and system, every thread), ms. */
  readonly processMs: number
  /** The store server's CPU time, ms, where the store reports it (Redis: INFO cpu). */
  readonly serverMs: number | undefined
  /**
   * The rest of the machine's busy CPU time meanwhile (the store's server where it does not report its
   * own, the kernel's network work, anything else running), ms; `undefined` without /proc/stat. Ticks
   * of 10 ms: a run of a second or more keeps the rounding under a few percent.
   */
  readonly restOfMachineMs: number | undefined
}

/**
 * Runs `run` and measures the CPU time this process, the store's server (given `serverCpuMs`, its
 * total so far) and the rest of the machine spent meanwhile: on a machine with nothing else to do,
 * the rest is the kernel's work for both ends (and the server, when it does not report its own).
 *
 * ```ts
 * const { value: cycles, cpu } = await withCpuTime(() => lockCycles(side, load), redisCpuMs)
 * ```
 */
export async function withCpuTime<T>(
  run: () => Promise<T>,
  serverCpuMs?: () => Promise<number>,
): Promise<{ value: T; cpu: CpuTime }> {
  const machineBefore = machineBusyMs()
  const serverBefore = await serverCpuMs?.()
  const processBefore = process.cpuUsage()
  const value = await run()
  const used = process.cpuUsage(processBefore)
  const serverAfter = await serverCpuMs?.()
  const machineAfter = machineBusyMs()
  const processMs = (used.user + used.system) / 1000
  const serverMs =
    serverBefore === undefined || serverAfter === undefined ? undefined : serverAfter - serverBefore
  const restOfMachineMs =
    machineBefore === undefined || machineAfter === undefined
      ? undefined
      : Math.max(0, machineAfter - machineBefore - processMs - (serverMs ?? 0))
  return { value, cpu: { processMs, serverMs, restOfMachineMs } }
}
