import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, test } from 'vitest'
import { machineBusyMs, withCpuTime } from '../src/cpu-time.js'
import { redisCpuMs } from '../src/peers/redis-peers.js'

const run = promisify(execFile)
// Another process burning `ms` of CPU: to this one, the rest of the machine.
const burn = (ms: number) =>
  run(process.execPath, [
    '-e',
    `const start = process.cpuUsage(); while ((process.cpuUsage(start).user) / 1000 < ${ms}) {}`,
  ])

describe.runIf(machineBusyMs() !== undefined)('withCpuTime on Linux', () => {
  test('CPU burnt by another process counts as the rest of the machine, not this one', async () => {
    const { cpu } = await withCpuTime(() => burn(400))
    // Ticks of 10 ms, and the child's own start-up on top: a lower bound only.
    expect(cpu.restOfMachineMs).toBeGreaterThanOrEqual(350)
    expect(cpu.processMs).toBeLessThan(cpu.restOfMachineMs!)
    expect(cpu.serverMs).toBeUndefined()
  })

  test("CPU burnt by this process counts as this process's", async () => {
    const { cpu } = await withCpuTime(async () => {
      const start = process.cpuUsage()
      while (process.cpuUsage(start).user / 1000 < 200) {}
    })
    expect(cpu.processMs).toBeGreaterThanOrEqual(200)
  })

  test("the server's reported CPU is taken out of the rest of the machine", async () => {
    // A "server" reporting more CPU than the child burnt: what is left of the rest is nothing.
    let reads = 0
    const serverCpuMs = async () => (reads++ === 0 ? 1_000 : 1_000_000)
    const { cpu } = await withCpuTime(() => burn(400), serverCpuMs)
    expect(cpu.serverMs).toBe(999_000)
    expect(cpu.restOfMachineMs).toBe(0)
  })
})

describe('redisCpuMs', () => {
  test("reads the server process's user and system seconds of INFO cpu, in ms", () => {
    const info =
      '# CPU\r\nused_cpu_sys:66.873026\r\nused_cpu_user:69.211485\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\nused_cpu_sys_main_thread:66.794088\r\n'
    expect(redisCpuMs(info)).toBeCloseTo(136_084.511, 3)
  })

  test('throws on a reply without them, rather than count 0', () => {
    expect(() => redisCpuMs('# CPU\r\nused_cpu_sys_main_thread:1.0\r\n')).toThrow(/INFO cpu has no used_cpu_/)
  })
})
