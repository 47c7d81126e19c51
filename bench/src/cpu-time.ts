import { readFileSync } from 'node:fs'

/**
 * Busy CPU time, ms, in the first line of Linux's /proc/stat: user, nice, system, irq and softirq over
 * every core (guest time is already inside user; idle, iowait and steal are not busy). `undefined` for
 * a text without that line.
 *
 * ```ts
 * parseProcStat('cpu  100 0 50 900 3 1 2 0 0 0\n') // (100 + 50 + 1 + 2) ticks = 1530 ms
 * ```
 */
export function parseProcStat(stat: string): number | undefined {
  const fields = /^cpu\s+(.*)$/m.exec(stat)?.[1]?.trim().split(/\s+/).map(Number)
  if (!fields || fields.length < 7 || fields.some((field) => !Number.isInteger(field))) return undefined
  // Columns: user, nice, system, idle, iowait, irq, softirq. The kernel counts in USER_HZ ticks, 100 a
  // second on every Linux architecture Node.js runs on.
  const busy = [0, 1, 2, 5, 6].reduce((sum, column) => sum + fields[column]!, 0)
  return busy * 10
}

/** The whole machine's busy CPU time so far, ms; `undefined` where there is no /proc/stat. */
export function machineBusyMs(): number | undefined {
  try {
    return parseProcStat(readFileSync('/proc/stat', 'utf8'))
  } catch {
    return undefined
  }
}

export interface CpuTime {
  /** This process's CPU time (user and system, every thread), ms. */
  readonly processMs: number
  /** The store server's CPU time, ms, where it reports its own (Redis: INFO cpu). */
  readonly serverMs: number | undefined
  /**
   * The rest of the machine's busy CPU time meanwhile (the store's server where it does not report
   * its own, some of the kernel's network work, anything else running), ms; `undefined` without
   * /proc/stat. The machine's total comes in ticks of 10 ms a core, so over a run of a second this is
   * good to some tens of ms either way: where it is small it is mostly that rounding, and it may come
   * out below 0, which is left as it is rather than biasing the median up.
   */
  readonly restOfMachineMs: number | undefined
}

/** Readings of the three clocks taken before and after a run, as {@link withCpuTime} takes them. */
export interface CpuReadings {
  readonly machineMs: readonly [number | undefined, number | undefined]
  /** This process's user + system µs over the run (`process.cpuUsage(before)`). */
  readonly processUsed: { readonly user: number; readonly system: number }
  readonly serverMs: readonly [number | undefined, number | undefined]
}

/** What each part of the machine spent between the readings. */
export function cpuTimeOf({ machineMs, processUsed, serverMs: server }: CpuReadings): CpuTime {
  const processMs = (processUsed.user + processUsed.system) / 1000
  const serverMs = server[0] === undefined || server[1] === undefined ? undefined : server[1] - server[0]
  const restOfMachineMs =
    machineMs[0] === undefined || machineMs[1] === undefined
      ? undefined
      : machineMs[1] - machineMs[0] - processMs - (serverMs ?? 0)
  return { processMs, serverMs, restOfMachineMs }
}

/**
 * Runs `run` and measures the CPU time this process, the store's server (given `serverCpuMs`, its
 * total so far on this machine) and the rest of the machine spent meanwhile. The server is read inside
 * this process's window, so the reads' own cost is the client's.
 *
 * ```ts
 * const { value: cycles, cpu } = await withCpuTime(() => lockCycles(side, load), redisCpuMs)
 * ```
 */
export async function withCpuTime<T>(
  run: () => Promise<T>,
  serverCpuMs?: () => Promise<number | undefined>,
): Promise<{ value: T; cpu: CpuTime }> {
  const machineBefore = machineBusyMs()
  const processBefore = process.cpuUsage()
  const serverBefore = await serverCpuMs?.()
  const value = await run()
  const serverAfter = await serverCpuMs?.()
  const processUsed = process.cpuUsage(processBefore)
  const machineAfter = machineBusyMs()
  return {
    value,
    cpu: cpuTimeOf({
      machineMs: [machineBefore, machineAfter],
      processUsed,
      serverMs: [serverBefore, serverAfter],
    }),
  }
}
