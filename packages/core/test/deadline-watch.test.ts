import { describe, expect, test } from 'vitest'
import type { Timers } from '../src/index.js'
import { TimerWheel } from '../src/timer-wheel.js'
import { ManualTime } from './manual-time.js'
import { DEADLINE, setup, TTL } from './setup.js'

// Leases wait for their local deadlines in the Leaser's wheel (renew-batch.test.ts counts its timers)
// and set a timer of their own only within a window of the deadline: the loss is still on time.
describe('waiting for the local deadline', () => {
  test.each([
    ['one by one', false],
    ['in batches', true],
  ])('renewals that hang (%s): the lease is lost at its local deadline exactly', async (_, batch) => {
    const { time, backend, leaser, named } = setup({ batch, callTimeoutMs: 5_000 })
    // Off the wheel's slot boundaries (a tenth of 900 ms): the last stretch is the lease's own timer.
    await time.advance(7)
    const lease = await leaser.acquire('job')
    backend.setLatency(10 * TTL, batch ? 'renewMany' : 'renew')
    await time.advance(DEADLINE - 1)
    expect(lease.held).toBe(true)
    expect(named('lost')).toHaveLength(0)
    await time.advance(1)
    expect(named('lost').map((event) => event.at)).toEqual([7 + DEADLINE])
  })
})

describe('looking for a wall-clock step', () => {
  // Found by a review (session 36): each look took the last one's lead as its baseline, so gains under
  // the step (short suspends, small NTP steps) were absorbed one by one, however far they added up.
  test.each([
    ['one by one', false],
    ['in batches', true],
  ])(
    'wall-clock gains each under the step still abort a kept signal within a window of the deadline (%s)',
    async (_, batch) => {
      const { time, backend, leaser, other } = setup({ batch, callTimeoutMs: 5_000 })
      const lease = await leaser.acquire('job')
      const signal = lease.signal // kept, as a caller hands it to its writes
      let abortedAtWall: number | undefined
      signal.addEventListener('abort', () => (abortedAtWall = time.wallNow()))
      // Renewals hang: only the deadline watch reads the clocks.
      backend.setLatency(10 * TTL, batch ? 'renewMany' : 'renew')
      // A look each window (90 ms); before each, a suspend of 85 ms: under the step of 90 ms.
      for (let look = 0; look < 6; look++) {
        await time.advance(90)
        time.suspend(85)
      }
      await time.advance(1)
      // The store's clock is the wall clock: past the expiry, a successor is in.
      expect((await other.acquire('job', 'worker-b', TTL)).fencingToken).toBe(lease.fencingToken + 1n)
      expect(abortedAtWall).toBeDefined()
      expect(abortedAtWall! - DEADLINE).toBeLessThanOrEqual(90 + 85)
      await time.until(leaser.close())
    },
  )

  // Found by a review (session 35): a process descheduled between the monotonic and the wall read of
  // one look saw both clocks move alike, yet read a step, and checked every lease at once (287 ms at
  // 100,000 leases).
  test('a pause between the two reads of one look is no step: no lease is checked early', async () => {
    const time = new ManualTime()
    let pauseAfterMonoRead = false
    const timers: Timers = {
      now: () => {
        const mono = time.now()
        if (pauseAfterMonoRead) {
          pauseAfterMonoRead = false
          time.jump(150)
        }
        return mono
      },
      wallNow: () => time.wallNow(),
      setTimeout: (callback, ms) => time.setTimeout(callback, ms),
      clearTimeout: (handle) => time.clearTimeout(handle),
    }
    const { leaser } = setup({ time, timers })
    await leaser.acquire('job')
    let checkedAll = 0
    const dueAll = TimerWheel.prototype.dueAll
    TimerWheel.prototype.dueAll = function (this: TimerWheel<unknown>) {
      checkedAll++
      dueAll.call(this)
    }
    try {
      for (let look = 0; look < 5; look++) {
        await time.advance(89) // just short of the next look (a window: 90 ms)
        pauseAfterMonoRead = true
        await time.advance(1)
        pauseAfterMonoRead = false
      }
    } finally {
      TimerWheel.prototype.dueAll = dueAll
    }
    expect(checkedAll).toBe(0)
    await time.until(leaser.close())
  })
})
