import { cpus, loadavg, release, totalmem, type } from 'node:os'

export interface Machine {
  readonly cpuModel: string
  readonly cores: number
  readonly memoryGiB: number
  readonly os: string
  readonly node: string
  /** 1-minute load average when the run started: other work on the machine makes absolute numbers noisy. */
  readonly loadAverageAtStart: number
}

/** The machine the numbers came from. */
export function describeMachine(): Machine {
  const list = cpus()
  return {
    cpuModel: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${type()} ${release()}`,
    node: process.version,
    loadAverageAtStart: Math.round((loadavg()[0] ?? 0) * 100) / 100,
  }
}
