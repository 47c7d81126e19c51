import { describe, expect, test } from 'vitest'
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
