import type { CallOptions } from '@worklease/spec'
import { ForwardingBackend } from '@worklease/testkit'
import { describe, expect, test } from 'vitest'
import { isLeaseEndedError, type LeaseLostError, type Timers } from '../src/index.js'
import { ManualTime } from './manual-time.js'
import { bytes, DEADLINE, INTERVAL, setup, TTL, text, track } from './setup.js'

// Guarantees no other test pinned down. Each case was found by mutating the runner (session 26, 75
// mutants): with the bug named beside it the case fails, on the real code it passes.

describe('the Leaser', () => {
  // Caught: the adopted lease's deadline counted from the retry (a holder past the store's expiry).
  test('a lease adopted from LEASE_HELD counts its deadline from the store expiry, not from the retry', async () => {
    // Transient backoff 300 ms (cap 600, random 0.5).
    const { time, leaser, backend, other } = setup({ retry: { initialDelayMs: 600 } })
    backend.loseNextReplies('acquire') // lands at 0 (store expiry 1000), the caller sees an error
    backend.failNext('renew', 1_000) // the confirming renew, and every later one, fails
    const acquiring = track(leaser.acquire('job'))
    await time.advance(300) // the retry at 300 meets LEASE_HELD naming us, expiring in 700 ms
    const lease = acquiring.value!
    expect(lease.fencingToken).toBe(1n)
    await time.advance(DEADLINE - 300) // 900: the first attempt's start + ttl - margin
    expect(lease.held).toBe(false)
    await time.advance(TTL - DEADLINE)
    await other.acquire('job', 'worker-b', TTL) // the store let a successor in at 1000
    expect(lease.held).toBe(false)
  })

  // Caught: a queued checkpoint checked for the deadline only, not for a release or close.
  test('a checkpoint still queued when release() is called is never sent', async () => {
    const { time, leaser, backend, store } = setup()
    const lease = await leaser.acquire('job')
    backend.setLatency(100, 'checkpoint')
    const first = track(lease.checkpoint(bytes('one')))
    const second = track(lease.checkpoint(bytes('two')))
    await time.advance(10)
    const releasing = lease.release()
    await time.advance(200)
    await releasing
    expect(first.rejected).toBe(false)
    expect(isLeaseEndedError(second.error)).toBe(true)
    expect(backend.calls.checkpoint).toBe(1)
    expect(text(store.leases.get('job')?.state ?? null)).toBe('one')
  })

  // Caught: a checkpoint reply not checked against the local deadline before it counts.
  test('a checkpoint whose reply comes after the local deadline (a process pause) rejects as lost', async () => {
    const { time, leaser, backend } = setup()
    const lease = await leaser.acquire('job')
    backend.setReplyLatency(50, 'checkpoint')
    const checkpointing = track(lease.checkpoint(bytes('x')))
    await time.advance(10)
    time.jump(2 * TTL) // paused while the reply is on its way
    await time.advance(100)
    expect(checkpointing.rejected).toBe(true)
    expect((checkpointing.error as LeaseLostError).reason).toBe('deadline')
  })

  // Caught: close() aborting only the call signals whose timeout is the default one.
  test('close aborts a hung call also when checkpointTimeoutMs differs from callTimeoutMs', async () => {
    const { time, leaser, backend } = setup({ checkpointTimeoutMs: 500 })
    await leaser.acquire('job')
    backend.setDown(true, 'hang')
    const closing = track(leaser.close({ timeoutMs: 200 }))
    await time.advance(200)
    expect(closing.settled).toBe(true)
    await time.advance(0)
    expect(time.pending).toBe(0)
  })

  // Found by a review (session 35) of the change that stopped 'renewed' after a loss: a closed
  // Leaser's run lease renews on until its callback settles, and those renewals are reported.
  test("a run's lease renewing after leaser.close() while its callback runs is reported renewed", async () => {
    const { time, leaser, backend, named } = setup()
    let finish!: () => void
    const running = track(leaser.run('job', () => new Promise<void>((resolve) => (finish = resolve))))
    await time.advance(10)
    const closing = leaser.close()
    const renews = backend.calls.renew
    const renewed = named('renewed').length
    await time.advance(3 * INTERVAL)
    expect({ renews: backend.calls.renew - renews, renewed: named('renewed').length - renewed }).toEqual({
      renews: 3,
      renewed: 3,
    })
    finish()
    await time.until(closing)
    expect(running.settled).toBe(true)
  })

  // Caught: 'lost' emitted before the lease ends locally.
  test("a 'lost' listener sees the signal aborted and the lease no longer held", async () => {
    const { time, leaser, memory } = setup()
    const lease = await leaser.acquire('job')
    const seen: unknown[] = []
    leaser.on('lost', () => seen.push([lease.signal.aborted, lease.held, leaser.leases.length]))
    await memory.revoke('job')
    await time.advance(400) // the renew at 333 is FENCED
    expect(seen).toEqual([[true, false, 0]])
  })
})

// Found by a review (session 35): 'acquired' was emitted after 'lost' for a lease dead at birth, so a
// listener that tracks held leases from the events kept one that was gone.
test('a lease whose acquire reply is read after its deadline (a pause) is reported lost, not acquired after', async () => {
  let time!: ManualTime
  class PausesAfterAcquire extends ForwardingBackend {
    override async acquireWithCheckpoint(
      workId: string,
      holderId: string,
      ttlMs: number,
      options?: CallOptions,
    ) {
      const taken = await super.acquireWithCheckpoint(workId, holderId, ttlMs, options)
      time.jump(2 * TTL) // the process pauses with the reply in hand
      return taken
    }
  }
  const context = setup({ wrap: (memory) => new PausesAfterAcquire(memory) })
  time = context.time
  const lease = await context.leaser.acquire('job')
  expect({
    held: lease.held,
    events: context.events.map(({ name }) => name),
    leases: context.leaser.leases.length,
  }).toEqual({ held: false, events: ['lost'], leases: 0 })
})

// Caught: an acquire that checks its signal only once the store was called.
test('an acquire whose signal is already aborted makes no store call', async () => {
  const { leaser, backend } = setup()
  const controller = new AbortController()
  controller.abort(new Error('no longer wanted'))
  await expect(leaser.acquire('job', { signal: controller.signal })).rejects.toThrow('no longer wanted')
  expect(backend.calls.acquire).toBe(0)
})

describe('a clock that reads no time', () => {
  test.each([
    ['wall clock', 'wallNow'],
    ['monotonic clock', 'now'],
  ] as const)(
    'one NaN reading of the %s at the acquire ends the lease at its deadline, not never',
    async (_, clock) => {
      const time = new ManualTime()
      let bad = 0
      const read = (value: number) => (bad-- > 0 ? Number.NaN : value)
      const timers: Timers = {
        now: () => (clock === 'now' ? read(time.now()) : time.now()),
        wallNow: () => (clock === 'wallNow' ? read(time.wallNow()) : time.wallNow()),
        setTimeout: (callback, ms) => time.setTimeout(callback, Number.isNaN(ms) ? 1 : ms),
        clearTimeout: (handle) => time.clearTimeout(handle),
      }
      const { leaser, backend, other, named } = setup({ time, timers })
      bad = 1 // the acquire's start reads each clock once
      const lease = await leaser.acquire('job')
      backend.setDown(true) // no renew lands from now on
      await time.advance(3 * TTL)
      const successor = await other.acquire('job', 'worker-b', TTL)
      expect({
        successor: successor.fencingToken,
        held: lease.held,
        aborted: lease.signal.aborted,
        lost: named('lost').map(({ event }) => event.reason),
      }).toEqual({ successor: 2n, held: false, aborted: true, lost: ['deadline'] })
    },
  )
})
