import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { MemoryBackend } from '@worklease/memory'
import { describe, expect, test } from 'vitest'
import { Leaser } from '../src/index.js'
import { TimerWheel } from '../src/timer-wheel.js'
import { ManualTime } from './manual-time.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

describe('TimerWheel', () => {
  test('items that left a slot are let go before the slot begins', () => {
    const time = new ManualTime()
    const slots = new Map<number, number | undefined>()
    const wheel = new TimerWheel<number>(
      time,
      10,
      () => undefined,
      (item) => slots.get(item),
    )
    for (let item = 0; item < 1_000; item++) slots.set(item, wheel.at(item, 500))
    for (let item = 10; item < 1_000; item++) {
      const slot = slots.get(item)!
      slots.set(item, undefined)
      wheel.leave(slot)
    }
    // Compacted once as many more left as still wait, plus 32: 10 wait, at most 52 are held.
    expect(wheel.held).toBeLessThanOrEqual(52)
    expect(time.pending).toBe(1)
  })

  test('a Leaser cycling through short leases beside a long one keeps none of them for a ttl', async () => {
    const time = new ManualTime()
    const leaser = new Leaser({
      backend: new MemoryBackend({ clock: time.wall }),
      ttlMs: 30_000,
      timers: time,
    })
    // Held throughout: the slots the short leases wait in never empty before they begin.
    await leaser.acquire('long-running')
    const released: WeakRef<object>[] = []
    for (let i = 0; i < 2_000; i++) {
      const lease = await leaser.acquire(`job-${i}`)
      await lease.release()
      released.push(new WeakRef(lease))
    }
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    // 20 here. Each waited in a renewal slot and a deadline slot beside the long lease: without
    // compaction all 2,000 were kept until those slots began.
    expect(released.filter((ref) => ref.deref() !== undefined).length).toBeLessThanOrEqual(64)
  })
})
