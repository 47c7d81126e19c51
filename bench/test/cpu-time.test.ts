import { describe, expect, test } from 'vitest'
import { cpuTimeOf, parseProcStat } from '../src/cpu-time.js'
import { redisCpuMs } from '../src/peers/redis-peers.js'

describe('parseProcStat', () => {
  test('busy = user + nice + system + irq + softirq, in ms; idle, iowait, steal and guest are not added', () => {
    // user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user already)
    const stat = 'cpu  1000 20 300 90000 400 5 60 700 800 900\ncpu0 500 10 150 45000 200 2 30 350 400 450\n'
    expect(parseProcStat(stat)).toBe((1000 + 20 + 300 + 5 + 60) * 10)
  })

  test('reads the machine line, not a core line', () => {
    expect(parseProcStat('intr 1 2\ncpu0 5 5 5 5 5 5 5\ncpu  1 2 3 4 5 6 7\n')).toBe((1 + 2 + 3 + 6 + 7) * 10)
  })

  test('undefined for a text without it, or with a field that is no count', () => {
    expect(parseProcStat('')).toBeUndefined()
    expect(parseProcStat('cpu  1 2 3\n')).toBeUndefined()
    expect(parseProcStat('cpu  1 2 x 4 5 6 7\n')).toBeUndefined()
  })
})

describe('cpuTimeOf', () => {
  test("the rest of the machine is its busy time less this process's and the server's", () => {
    expect(
      cpuTimeOf({
        machineMs: [10_000, 10_900],
        processUsed: { user: 300_000, system: 100_000 },
        serverMs: [2_000, 2_350],
      }),
    ).toEqual({ processMs: 400, serverMs: 350, restOfMachineMs: 150 })
  })

  test('without a server reading, the server stays in the rest', () => {
    expect(
      cpuTimeOf({
        machineMs: [10_000, 10_900],
        processUsed: { user: 300_000, system: 100_000 },
        serverMs: [2_000, undefined],
      }),
    ).toEqual({ processMs: 400, serverMs: undefined, restOfMachineMs: 500 })
  })

  test('ticks that rounded the machine down leave a rest below 0, not clipped to 0', () => {
    expect(
      cpuTimeOf({
        machineMs: [0, 400],
        processUsed: { user: 405_000, system: 0 },
        serverMs: [undefined, undefined],
      }).restOfMachineMs,
    ).toBe(-5)
  })

  test('no rest without /proc/stat', () => {
    expect(
      cpuTimeOf({ machineMs: [undefined, undefined], processUsed: { user: 1, system: 1 }, serverMs: [0, 1] })
        .restOfMachineMs,
    ).toBeUndefined()
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
