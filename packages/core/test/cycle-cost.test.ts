import { createHook } from 'node:async_hooks'
import { MemoryBackend } from '@worklease/memory'
import { ErrorCode, isWorkleaseError } from '@worklease/spec'
import { afterEach, describe, expect, test } from 'vitest'
import { Leaser } from '../src/index.js'
import { ManualTime } from './manual-time.js'
import { countingTimers } from './setup.js'

// Issue 19: on a store answering in microseconds, the runner's own bookkeeping is the cost of a
// lease. An AbortSignal (and its abort) costs microseconds on Node.js 20, so a lease nobody watches
// gets none of its own, and backend calls that start close together share one. Counted, never timed.
const RealAbortController = globalThis.AbortController
let signalsMade = 0

afterEach(() => {
  globalThis.AbortController = RealAbortController
})

function countSignals() {
  signalsMade = 0
  const made = new WeakSet<AbortController>()
  globalThis.AbortController = class extends RealAbortController {
    override get signal(): AbortSignal {
      if (!made.has(this)) {
        made.add(this)
        signalsMade++
      }
      return super.signal
    }
  }
}

function setup() {
  const time = new ManualTime()
  const backend = new MemoryBackend({ clock: time.wall })
  const leaser = new Leaser({ backend, ttlMs: 1_000, holderId: 'worker-a', timers: time })
  return { time, backend, leaser }
}

describe('what a lease nobody watches costs', () => {
  test("leases share their backend calls' AbortSignals: ten acquire and release cycles make one", async () => {
    const { leaser } = setup()
    countSignals()
    for (let cycle = 0; cycle < 10; cycle++) {
      const lease = await leaser.acquire(`job-${cycle}`)
      await lease.release()
    }
    expect(signalsMade).toBe(1)
  })

  test('run with a checkpoint: the checkpoint and the release share one signal', async () => {
    const { leaser } = setup()
    countSignals()
    await leaser.run('job', (lease) => lease.checkpoint(new Uint8Array(8)))
    expect(signalsMade).toBe(1)
  })

  test('a call that starts once a sixteenth of the call timeout has passed gets a new signal', async () => {
    const { leaser, time } = setup()
    countSignals()
    const first = await leaser.acquire('first')
    await first.release()
    // callTimeoutMs defaults to the renew interval, floor(1000 / 3) = 333 ms: a slice is 333 / 16 ms.
    await time.advance(Math.ceil(333 / 16))
    const second = await leaser.acquire('second')
    await second.release()
    expect(signalsMade).toBe(2)
  })

  test('a signal first read after the release is aborted with the LEASE_ENDED error later calls get', async () => {
    const { leaser } = setup()
    const lease = await leaser.acquire('job')
    await lease.release()
    const rejected = await lease.readCheckpoint().catch((error: unknown) => error)
    expect(lease.signal.aborted).toBe(true)
    expect(isWorkleaseError(lease.signal.reason, ErrorCode.LEASE_ENDED)).toBe(true)
    expect(lease.signal.reason).toBe(rejected)
    expect(lease.signal.reason.reason).toBe('released')
  })

  test('a signal read while held aborts at the release with that same error', async () => {
    const { leaser } = setup()
    const lease = await leaser.acquire('job')
    const signal = lease.signal
    expect(signal.aborted).toBe(false)
    await lease.release()
    expect(signal.aborted).toBe(true)
    expect(signal.reason.reason).toBe('released')
    await expect(lease.checkpoint(new Uint8Array(1))).rejects.toBe(signal.reason)
  })
})

/** The promises `cycle` makes, per call, over `cycles` calls (async_hooks sees every one). */
async function promisesPerCycle(cycles: number, cycle: (index: number) => Promise<void>): Promise<number> {
  let made = 0
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') made++
    },
  })
  hook.enable()
  try {
    for (let index = 0; index < cycles; index++) await cycle(index)
  } finally {
    hook.disable()
  }
  return made / cycles
}

describe('what an acquire and release cost in promises', () => {
  // Each promise is an allocation and a microtask, and at a store's speed they were most of the
  // runner's CPU: 30 more than the driver's own calls made (a race over a linked cancel with its
  // .finally, per backend call; a .catch and two .finally per queued op), 15 since, and 10 once the
  // queue and the release stopped wrapping their work in async functions and the leases' queues
  // started from one shared promise.
  test('the Leaser makes at most 10 promises an acquire and release beyond the driver calls it makes', async () => {
    const { leaser, backend } = setup()
    const driver = await promisesPerCycle(100, async (index) => {
      const record = await backend.acquire(`driver-${index}`, 'worker-b', 1_000)
      await backend.release(record)
    })
    const runner = await promisesPerCycle(100, async (index) => {
      const lease = await leaser.acquire(`job-${index}`)
      await lease.release()
    })
    expect(runner - driver).toBeLessThanOrEqual(10)
  })
})

describe('what an acquire and release cost in timers', () => {
  // A timer is an allocation, a list insert and a removal in Node.js: five of them a cycle (each
  // call's timeout, its slice's signal, the deadline wheel's and the renewal schedule's slot, each
  // set for the lease and cleared when it left) were a fifth of the runner's CPU on the memory
  // backend. The shared ones now stay armed while leases come and go.
  test('a hundred acquire and release cycles, one after another, set five timers in all', async () => {
    const time = new ManualTime()
    const { timers, counts } = countingTimers(time)
    // Without jitter: a lease due sooner than the one the schedule's timer waits for sets it again.
    const leaser = new Leaser({
      backend: new MemoryBackend({ clock: time.wall }),
      ttlMs: 1_000,
      holderId: 'worker-a',
      timers,
      random: () => 0.5,
    })
    for (let cycle = 0; cycle < 100; cycle++) {
      const lease = await leaser.acquire(`job-${cycle}`)
      await lease.release()
    }
    // The fifth: the deadline wheel's look at the wall clock, set once while leases come and go.
    expect(counts.timersSet).toBeLessThanOrEqual(5)
    await leaser.close()
    expect(time.pending).toBe(0)
  })
})

describe('what a lease cycle costs in clock readings', () => {
  // A reading costs ~70 ns on Node.js 20 (performance.now and Date.now alike), a tenth of a whole
  // store call on the memory backend: an op's liveness check and its call's start share one.
  test('acquire, checkpoint and release read the clocks 4, 7 and 2 times, the driver aside', async () => {
    const time = new ManualTime()
    const { timers, counts } = countingTimers(time)
    const backend = new MemoryBackend({ clock: time.wall })
    const leaser = new Leaser({ backend, ttlMs: 1_000, holderId: 'worker-a', timers, random: () => 0.5 })
    const warm = await leaser.acquire('warm')
    await warm.release()
    counts.clockReads = 0
    const lease = await leaser.acquire('job')
    const afterAcquire = counts.clockReads
    await lease.checkpoint(new Uint8Array(8))
    const afterCheckpoint = counts.clockReads
    await lease.release()
    // acquire: its start and the reply's (both clocks each); checkpoint: a pair as it is asked for,
    // one for its time budget, a pair for the check and the call's start, a pair once the reply is
    // in; release: a pair as it is asked for (a pause may have carried the lease past its deadline),
    // which the release's check and its call's start share when nothing else is queued.
    expect([afterAcquire, afterCheckpoint - afterAcquire, counts.clockReads - afterCheckpoint]).toEqual([
      4, 7, 2,
    ])
    await leaser.close()
  })
})
