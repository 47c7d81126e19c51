import type { LeasePage, ListOptions } from '@worklease/spec'
import { ForwardingBackend } from '@worklease/testkit'
import { describe, expect, test } from 'vitest'
import { isLeaseEndedError, isLeaseLostError, type LeaseLostError, LeasePool } from '../src/index.js'
import { bytes, DEADLINE, requiredOnly, setup, TTL, text, track } from './setup.js'

// Guarantees no other test pinned down. Each case was found by mutating the runner (session 26, 75
// mutants): with the mutant named beside it the case fails, on the real code it passes.

describe('the Leaser', () => {
  // M20
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

  // M11
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

  // M13
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

  // M25
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

  // M61
  test('a FENCED on the first and only release attempt is a takeover, also on a backend without list', async () => {
    class NoList extends ForwardingBackend {
      override get capabilities() {
        return requiredOnly(this.inner.capabilities)
      }
    }
    const { time, leaser, backend, ahead } = setup({ wrap: (memory) => new NoList(memory) })
    const running = track(
      leaser.run('job', async () => {
        await ahead.acquire('job', 'worker-b', TTL)
        return 'result'
      }),
    )
    await time.advance(100)
    expect(backend.calls.release).toBe(1)
    expect(isLeaseLostError(running.error)).toBe(true)
    expect((running.error as LeaseLostError).reason).toBe('fenced')
  })

  // M58
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

// M74
test('an acquire whose signal is already aborted makes no store call', async () => {
  const { leaser, backend } = setup()
  const controller = new AbortController()
  controller.abort(new Error('no longer wanted'))
  await expect(leaser.acquire('job', { signal: controller.signal })).rejects.toThrow('no longer wanted')
  expect(backend.calls.acquire).toBe(0)
})

describe('the pool', () => {
  // M46
  test('a take whose done-mark read fails never starts the handler on that take', async () => {
    class MarkReadFails extends ForwardingBackend {
      failures = 1
      override async list(options?: ListOptions): Promise<LeasePage> {
        if (options?.prefix === 'g/d/u1' && this.failures-- > 0) throw new Error('connection reset')
        return super.list(options)
      }
    }
    const { time, leaser } = setup({ wrap: (memory) => new MarkReadFails(memory) })
    const ran: string[] = []
    const pool = new LeasePool({
      leaser,
      group: 'g',
      units: ['u1'],
      timers: time,
      random: () => 0.5,
      handler: (_lease, unit) => {
        ran.push(unit.id)
      },
    })
    await time.until(pool.start())
    // The mark could not be read: the unit may be finished already, so it goes back unrun.
    expect(ran).toEqual([])
    await time.advance(3 * TTL)
    expect(ran).toEqual(['u1'])
    await time.until(pool.close())
  })

  // M72
  test('close stops a handler waiting out its retry backoff at once', async () => {
    const { time, leaser, store } = setup()
    const pool = new LeasePool({
      leaser,
      group: 'g',
      units: ['u1'],
      timers: time,
      random: () => 0.5,
      handler: () => {
        throw new Error('boom')
      },
    })
    await time.until(pool.start())
    await time.advance(10) // failed once, now in a 500 ms backoff
    const closing = pool.close()
    const took = await time.until(closing)
    expect(took).toBeLessThan(100)
    expect(store.leases.get('g/u/u1')?.released).toBe(true)
  })

  // M68
  test('a unit taken out of the set and put back runs again once its cleared done mark expired', async () => {
    const { time, leaser } = setup()
    let units = ['u1']
    const ran: string[] = []
    const pool = new LeasePool({
      leaser,
      group: 'g',
      units: () => units,
      timers: time,
      random: () => 0.5,
      handler: (_lease, unit) => {
        ran.push(unit.id)
      },
    })
    await time.until(pool.start())
    await time.advance(TTL)
    expect(ran).toEqual(['u1'])
    units = [] // u1 leaves the set: its done mark is taken and left to expire
    await time.advance(3 * TTL)
    units = ['u1'] // back: to be run again
    await time.advance(3 * TTL)
    expect(ran).toEqual(['u1', 'u1'])
    await time.until(pool.close())
  })
})
