import { MemoryBackend } from '@worklease/memory'
import { type BackendCapabilities, isFencedError, type LeaseRecord } from '@worklease/spec'
import { ForwardingBackend } from '@worklease/testkit'
import { describe, expect, test } from 'vitest'
import {
  finishRenewal,
  RenewalSchedule,
  renewalSlot,
  type ScheduledLease,
  startRenewal,
} from '../src/renewal-schedule.js'
import type { Instant } from '../src/timers.js'
import { ManualTime } from './manual-time.js'

const TTL = 1_000

/** The memory backend taking at most `maxRecords` per renewMany, recording each call's workIds. */
class SmallBatches extends ForwardingBackend {
  readonly calls: string[][] = []
  constructor(
    inner: MemoryBackend,
    readonly maxRecords: number,
  ) {
    super(inner)
  }
  override get capabilities(): BackendCapabilities {
    return { ...this.inner.capabilities, renewMany: { maxRecords: this.maxRecords } }
  }
  override renewMany(...args: Parameters<NonNullable<MemoryBackend['renewMany']>>) {
    this.calls.push(args[0].map((record) => record.workId))
    return this.inner.renewMany!(...args)
  }
}

/** A lease as the schedule sees it, keeping the outcome it is handed. */
function scheduled(record: LeaseRecord) {
  let slot: number | undefined
  const lease = {
    record,
    outcome: undefined as 'renewed' | unknown,
    slotOf: (at: number) => (slot = at),
    get [renewalSlot]() {
      return slot
    },
    [startRenewal]: (at: number) => at === slot,
    [finishRenewal]: (_sentAt: Instant, _receivedAt: Instant, error?: unknown) => {
      lease.outcome = error ?? 'renewed'
    },
  } satisfies ScheduledLease & Record<string, unknown>
  return lease
}

/** A schedule with 10 ms slots over a memory backend on a fake clock, `maxRecords` per renewMany. */
function setup(maxRecords: number, mayRepeat?: () => boolean) {
  const time = new ManualTime()
  const memory = new MemoryBackend({ clock: time.wall })
  const backend = new SmallBatches(memory, maxRecords)
  const schedule = new RenewalSchedule(backend, {
    maxRecords,
    ttlMs: TTL,
    timers: time,
    windowMs: 10,
    callTimeoutMs: TTL,
    ...(mayRepeat ? { mayRepeat } : {}),
  })
  return { time, memory, backend, schedule }
}

describe('RenewalSchedule', () => {
  test('a workId due twice in one slot is never sent twice in one renewMany (the contract refuses it)', async () => {
    const { time, memory, backend, schedule } = setup(2)
    const stale = await memory.acquire('job-a', 'worker-a', TTL)
    await memory.release(stale)
    const current = await memory.acquire('job-a', 'worker-a', TTL)
    const other = await memory.acquire('job-b', 'worker-a', TTL)
    const leases = [scheduled(stale), scheduled(current), scheduled(other)]
    for (const lease of leases) lease.slotOf(schedule.at(lease, 300))
    await time.advance(300)
    for (const workIds of backend.calls) expect(new Set(workIds).size).toBe(workIds.length)
    expect(backend.calls.flat().sort()).toEqual(['job-a', 'job-a', 'job-b'])
    // Each lease heard its own outcome: the released one is fenced, the others renewed.
    expect(isFencedError(leases[0]!.outcome)).toBe(true)
    expect(leases[1]!.outcome).toBe('renewed')
    expect(leases[2]!.outcome).toBe('renewed')
  })

  test('a slot of many leases goes out in full chunks of maxRecords', async () => {
    const { time, memory, backend, schedule } = setup(10)
    const records = await Promise.all(
      Array.from({ length: 25 }, (_, i) => memory.acquire(`job-${i}`, 'worker-a', TTL)),
    )
    const leases = records.map(scheduled)
    for (const lease of leases) lease.slotOf(schedule.at(lease, 300))
    await time.advance(300)
    expect(backend.calls.map((workIds) => workIds.length)).toEqual([10, 10, 5])
    for (const lease of leases) expect(lease.outcome).toBe('renewed')
  })

  test('told no workId can repeat, it fills chunks in the order the leases fell due', async () => {
    const { time, memory, backend, schedule } = setup(10, () => false)
    const records = await Promise.all(
      Array.from({ length: 25 }, (_, i) => memory.acquire(`job-${i}`, 'worker-a', TTL)),
    )
    await memory.release(records[3]!)
    const leases = records.map(scheduled)
    for (const lease of leases) lease.slotOf(schedule.at(lease, 300))
    await time.advance(300)
    expect(backend.calls).toEqual(
      [0, 10, 20].map((from) => records.slice(from, from + 10).map((r) => r.workId)),
    )
    expect(isFencedError(leases[3]!.outcome)).toBe(true)
    for (const [i, lease] of leases.entries()) if (i !== 3) expect(lease.outcome).toBe('renewed')
  })
})
