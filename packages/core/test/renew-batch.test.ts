import { MemoryBackend, MemoryStore } from '@worklease/memory'
import {
  type Backend,
  type CallOptions,
  isLeaseHeldError,
  type LeaseRecord,
  type RenewOutcome,
} from '@worklease/spec'
import { ForwardingBackend, InjectedFaultError } from '@worklease/testkit'
import { describe, expect, test } from 'vitest'
import { isLeaseLostError, type LeaseLostError, Leaser } from '../src/index.js'
import { ManualTime } from './manual-time.js'
import { collectUnhandledRejections, countingTimers, DEADLINE, INTERVAL, setup, TTL, track } from './setup.js'

// floor(INTERVAL / 10): the schedule's slots. A renewal due at INTERVAL goes out at the start of the
// slot holding it: within the interval, at most a window early.
const WINDOW = Math.floor(INTERVAL / 10)
const SENT = Math.floor(INTERVAL / WINDOW) * WINDOW

/** A store whose next renewMany reply is rewritten by `nextReply` (once), as a faulty driver's would be. */
class RewrittenReply extends ForwardingBackend {
  nextReply: ((outcomes: RenewOutcome[]) => unknown[]) | undefined
  override async renewMany(records: readonly LeaseRecord[], ttlMs: number, options?: CallOptions) {
    const outcomes = await super.renewMany(records, ttlMs, options)
    const rewrite = this.nextReply
    this.nextReply = undefined
    return (rewrite ? rewrite(outcomes) : outcomes) as RenewOutcome[]
  }
}

describe('renewals through renewMany', () => {
  test('many leases are renewed in one renewMany per interval, not one renew each', async () => {
    const { time, backend, leaser, other } = setup({ batch: true })
    const leases = await Promise.all(Array.from({ length: 50 }, (_, i) => leaser.acquire(`job-${i}`)))
    await time.advance(10 * TTL)
    for (const lease of leases) expect(lease.held).toBe(true)
    expect(backend.calls.renew).toBe(0)
    // Sent at most WINDOW early: one call per interval for all 50.
    expect(backend.calls.renewMany).toBe(Math.floor((10 * TTL) / INTERVAL))
    await expect(other.acquire('job-7', 'worker-b', TTL)).rejects.toSatisfy(isLeaseHeldError)
  })

  test('held leases set no timer of their own: one renewal schedule and one deadline wheel for all', async () => {
    const time = new ManualTime()
    const { timers, counts } = countingTimers(time)
    const { leaser } = setup({ batch: true, time, timers })
    const leases = await Promise.all(Array.from({ length: 200 }, (_, i) => leaser.acquire(`job-${i}`)))
    counts.timersSet = 0
    const intervals = 10
    await time.advance(intervals * INTERVAL)
    for (const lease of leases) expect(lease.held).toBe(true)
    // Per interval: the batch's slot timer and its call timeout, and now and then the deadline
    // wheel's timer: 24; and the wheel's look at the wall clock once a window (90 ms), 37 more.
    // A watchdog timer per lease, set again at each deadline, made it 820.
    expect(counts.timersSet).toBeLessThanOrEqual(intervals * 3 + Math.ceil((intervals * INTERVAL) / 90))
    await Promise.all(leases.map((lease) => lease.release()))
    await leaser.close()
    expect(time.pending).toBe(0)
  })

  test('a batch reads the clocks once to send and once per reply, the deadline wheel once a wake', async () => {
    const time = new ManualTime()
    const backend = new MemoryBackend({ clock: time.wall })
    // No listener: a 'renewed' listener asks each lease for its remainingMs, which reads the clocks.
    const { timers, counts } = countingTimers(time)
    const leaser = new Leaser({ backend, ttlMs: TTL, holderId: 'worker-a', timers, renewJitter: 0 })
    await Promise.all(Array.from({ length: 100 }, (_, i) => leaser.acquire(`job-${i}`)))
    counts.clockReads = 0
    await time.advance(INTERVAL)
    expect(backend.store.operations).toBeGreaterThan(0)
    // 9 here. Four per lease (the deadline on both clocks, at the send and at the reply) made it 404.
    expect(counts.clockReads).toBeLessThanOrEqual(20)
    // Over three ttls the deadline wheel wakes each lease too: it reads the clocks once per wake.
    counts.clockReads = 0
    await time.advance(3 * TTL)
    // 88 here, and three a window (90 ms) where the wheel looks for a wall-clock step: 99 more;
    // 2,080 when each lease read them five times a wake.
    expect(counts.clockReads).toBeLessThanOrEqual(120 + 3 * Math.ceil((3 * TTL) / 90))
    expect(leaser.leases.length).toBe(100)
  })

  // Found by a review (session 35): the batch reads its reply time once, and a listener that blocks
  // makes that time stale for the leases after it.
  test("a lease of a batch whose deadline passed while a 'renewed' listener ran is reported lost, not renewed", async () => {
    const { time, leaser } = setup({ batch: true })
    await Promise.all([leaser.acquire('a'), leaser.acquire('b')])
    const seen: string[] = []
    leaser.on('renewed', (event) => {
      seen.push(`renewed ${event.workId}`)
      if (seen.length === 1) time.jump(2 * TTL) // the listener blocks the process past every deadline
    })
    leaser.on('lost', (event) => seen.push(`lost ${event.workId}`))
    await time.advance(INTERVAL)
    expect(seen).toEqual(['renewed a', 'lost b'])
    await time.advance(100) // a's deadline passed in the pause too: the wheel's next look finds it
    expect(seen).toEqual(['renewed a', 'lost b', 'lost a'])
  })

  test('a renewal waiting for its batch is still sent within the interval', async () => {
    const { time, leaser, named } = setup({ batch: true })
    await leaser.acquire('job')
    await time.advance(INTERVAL)
    expect(SENT).toBeGreaterThan(INTERVAL - WINDOW)
    expect(named('renewed').map((event) => event.at)).toEqual([SENT])
  })

  test('larger sets go out in chunks of capabilities.renewMany.maxRecords', async () => {
    const { time, backend, leaser } = setup({ batch: true })
    const { maxRecords } = backend.capabilities.renewMany!
    await Promise.all(Array.from({ length: maxRecords + 1 }, (_, i) => leaser.acquire(`job-${i}`)))
    await time.advance(INTERVAL)
    expect(backend.calls.renewMany).toBe(2)
    expect(leaser.leases).toHaveLength(maxRecords + 1)
  })

  test('each outcome reaches exactly its own lease: FENCED and expired end only those', async () => {
    const { time, leaser, other, store, named } = setup({ batch: true })
    const kept = await leaser.acquire('kept')
    const released = await leaser.acquire('released-by-other')
    const revoked = await leaser.acquire('revoked')
    const expired = await leaser.acquire('expired')
    await other.release(released.record)
    await other.revoke('revoked')
    // Stored as expired (a clock that jumped, say): the batch finds it valid but past its expiry.
    store.leases.get('expired')!.expiresAtMs = time.wall.now() - 1
    await time.advance(INTERVAL)
    expect(kept.held).toBe(true)
    expect(kept.signal.aborted).toBe(false)
    expect((released.signal.reason as LeaseLostError).reason).toBe('fenced')
    expect((revoked.signal.reason as LeaseLostError).reason).toBe('fenced')
    expect((expired.signal.reason as LeaseLostError).reason).toBe('expired')
    expect(isLeaseLostError(expired.lossError)).toBe(true)
    expect(
      named('lost')
        .map((event) => event.event.workId)
        .sort(),
    ).toEqual(['expired', 'released-by-other', 'revoked'])
    await time.advance(5 * TTL)
    expect(kept.held).toBe(true)
  })

  test('a failed renewMany is a store failure for each lease in it: retried, nobody lost', async () => {
    const { time, backend, leaser, named } = setup({ batch: true })
    const leases = await Promise.all([leaser.acquire('a'), leaser.acquire('b'), leaser.acquire('c')])
    backend.failNext('renewMany')
    await time.advance(INTERVAL)
    expect(backend.calls.renewMany).toBe(1)
    expect(named('renewFailed')).toHaveLength(3)
    for (const event of named('renewFailed')) {
      expect(event.event.error).toBeInstanceOf(InjectedFaultError)
      expect(event.event.attempt).toBe(1)
    }
    expect(named('lost')).toHaveLength(0)
    // Retried after the first backoff (25 ms), in the schedule's next slot after it.
    await time.advance(WINDOW + 25)
    expect(backend.calls.renewMany).toBe(2)
    expect(named('renewed').map(({ at }) => at)).toEqual([SENT + WINDOW, SENT + WINDOW, SENT + WINDOW])
    await time.advance(5 * TTL)
    for (const lease of leases) expect(lease.held).toBe(true)
    expect(named('lost')).toHaveLength(0)
  })

  test('a renewMany reply that is not one known outcome per record is a store failure, never a loss', async () => {
    let store!: RewrittenReply
    const { time, leaser, named } = setup({
      batch: true,
      wrap: (memory) => {
        store = new RewrittenReply(memory)
        return store
      },
    })
    await Promise.all([leaser.acquire('a'), leaser.acquire('b'), leaser.acquire('c')])
    const failed = () =>
      named('renewFailed').map(({ event }) => [event.workId, (event.error as Error).constructor.name])
    // One outcome short: the whole reply is unusable, for every lease in the batch alike.
    store.nextReply = (outcomes) => outcomes.slice(0, -1)
    await time.advance(INTERVAL)
    expect(failed()).toEqual([
      ['a', 'TypeError'],
      ['b', 'TypeError'],
      ['c', 'TypeError'],
    ])
    await time.advance(INTERVAL)
    expect(named('renewed')).toHaveLength(3)
    // An outcome nobody knows fails that lease's renewal alone; it is not taken for FENCED.
    store.nextReply = (outcomes) => outcomes.map((outcome, i) => (i === 1 ? 'taken over' : outcome))
    await time.advance(INTERVAL)
    expect(failed().slice(3)).toEqual([['b', 'TypeError']])
    await time.advance(5 * TTL)
    expect(named('lost')).toHaveLength(0)
    expect(leaser.leases.map((lease) => lease.workId).sort()).toEqual(['a', 'b', 'c'])
  })

  test('a renewMany that answers without a promise is taken as resolved: the lease stays held', async () => {
    // The runner's promise for backends (user code): a value that is not a promise is a resolved one.
    const time = new ManualTime()
    const store = new MemoryStore()
    const memory = new MemoryBackend({ store, clock: time.wall })
    const backend: Backend = {
      capabilities: memory.capabilities,
      acquire: (...args) => memory.acquire(...args),
      renew: (...args) => memory.renew(...args),
      checkpoint: (...args) => memory.checkpoint(...args),
      release: (...args) => memory.release(...args),
      readCheckpoint: (...args) => memory.readCheckpoint(...args),
      // Renews in the in-process store (synchronous under the hood) and answers at once.
      renewMany: ((records: readonly LeaseRecord[], ttlMs: number) => {
        for (const record of records) void memory.renew(record, ttlMs)
        return records.map((): RenewOutcome => 'renewed')
      }) as unknown as Backend['renewMany'],
    }
    const leaser = new Leaser({ backend, ttlMs: TTL, holderId: 'worker-a', timers: time, renewJitter: 0 })
    const failed: unknown[] = []
    leaser.on('renewFailed', ({ error }) => failed.push(error))
    const lease = await leaser.acquire('job')
    await time.advance(3 * TTL)
    expect({ held: lease.held, failed }).toEqual({ held: true, failed: [] })
    await time.until(leaser.close())
  })

  test('close aborts a batch still out in the store and leaves no timer behind', async () => {
    const { time, leaser, backend } = setup({ batch: true })
    const lease = await leaser.acquire('job')
    let batchSignal: AbortSignal | undefined
    backend.inner.renewMany = (_records, _ttlMs, options) => {
      batchSignal = options?.signal
      return new Promise(() => undefined)
    }
    await time.advance(SENT)
    expect(batchSignal?.aborted).toBe(false)
    backend.setDown(true, 'hang')
    const closing = track(leaser.close({ timeoutMs: 100 }))
    await time.advance(100)
    expect(closing.settled).toBe(true)
    expect(lease.held).toBe(false)
    await time.advance(0)
    expect({ pending: time.pending, batchAborted: batchSignal!.aborted }).toEqual({
      pending: 0,
      batchAborted: true,
    })
  })

  test('the local deadline moves from when the batch was sent, not from the reply', async () => {
    const { time, backend, leaser } = setup({ batch: true })
    const lease = await leaser.acquire('job')
    backend.setReplyLatency(100, 'renewMany')
    // Sent at SENT, answered 100 ms later.
    await time.advance(SENT + 100)
    expect(backend.calls.renewMany).toBe(1)
    expect(lease.remainingMs()).toBe(SENT + TTL - TTL / 10 - time.now())
  })

  test('a slow renewal overtaken by a checkpoint still leaves the next renewal scheduled', async () => {
    const { time, backend, leaser, named } = setup({ batch: true, callTimeoutMs: 600 })
    const lease = await leaser.acquire('job')
    // Each batch is answered 400 ms after it was sent: longer than the interval, within the call timeout.
    backend.setReplyLatency(400, 'renewMany')
    await time.advance(SENT + 20)
    // Sent after the batch and answered before it: the checkpoint counts for more, and the renewal due
    // an interval after it falls while the batch is still out.
    await lease.checkpoint(new Uint8Array([1]))
    await time.advance(5 * TTL)
    expect(named('lost')).toHaveLength(0)
    expect(lease.held).toBe(true)
    expect(backend.calls.renewMany).toBeGreaterThan(5)
  })

  test('a lease ended while waiting for its batch is not sent', async () => {
    const { time, backend, leaser } = setup({ batch: true })
    const kept = await leaser.acquire('kept')
    const abandoned = await leaser.acquire('abandoned')
    await time.advance(INTERVAL - WINDOW)
    abandoned.abandon()
    let sent: string[] = []
    const renewMany = backend.inner.renewMany!.bind(backend.inner)
    backend.inner.renewMany = async (records, ttlMs, options) => {
      sent = records.map((record) => record.workId)
      return renewMany(records, ttlMs, options)
    }
    await time.advance(WINDOW)
    expect(sent).toEqual(['kept'])
    expect(kept.held).toBe(true)
  })

  // Found by a review (session 36): the release waited for the whole batch, whose call timeout may be
  // far past the lease's deadline, where a renew of its own is given up at the deadline.
  test.each([
    ['one by one', false],
    ['in batches', true],
  ])(
    'a release behind a renewal that hangs (%s) settles by the local deadline, not the call timeout',
    async (_, batch) => {
      const { time, backend, leaser, named } = setup({ batch, callTimeoutMs: 20 * TTL })
      const lease = await leaser.acquire('job')
      backend.setLatency(100 * TTL, batch ? 'renewMany' : 'renew')
      backend.setLatency(100 * TTL, 'release')
      await time.advance(INTERVAL + 10)
      const releasing = track(lease.release())
      await time.advance(DEADLINE - INTERVAL - 10)
      expect(named('lost').map(({ event }) => event.reason)).toEqual(['deadline'])
      await time.advance(1)
      expect({ batch, settled: releasing.settled }).toEqual({ batch, settled: true })
      await time.until(leaser.close())
    },
  )
})

// Found by a review (session 48): a release asked for after the lease was lost waited for a renewMany
// still out, up to its call timeout, where one by one it settled at once (the halt abandons the
// lease's own renew). Only a release already waiting when the lease was lost was woken.
describe('a lease lost while its renewal is out', () => {
  test.each([
    ['one by one', false],
    ['in batches', true],
  ])('released afterwards (%s): the release settles at once', async (_, batch) => {
    const { time, backend, leaser, named } = setup({ batch, callTimeoutMs: 20 * TTL })
    const lease = await leaser.acquire('job')
    backend.setLatency(100 * TTL, batch ? 'renewMany' : 'renew')
    // The renewal goes out at about INTERVAL and hangs; the deadline passes.
    await time.advance(DEADLINE + 10)
    expect(named('lost').map(({ event }) => event.reason)).toEqual(['deadline'])
    const releasing = track(lease.release())
    await time.advance(50)
    expect({ batch, settled: releasing.settled }).toEqual({ batch, settled: true })
    await time.until(leaser.close())
  })

  test.each([
    ['one by one', false],
    ['in batches', true],
  ])('in run (%s): run rejects at the deadline, not at the renewal call timeout', async (_, batch) => {
    const { time, backend, leaser } = setup({ batch, callTimeoutMs: 20 * TTL })
    const running = leaser.run('job', async () => {
      backend.setLatency(100 * TTL, batch ? 'renewMany' : 'renew')
      await time.sleep(DEADLINE + 10)
    })
    const outcome = track(running)
    const took = await time.until(
      running.catch(() => undefined),
      100 * TTL,
      50,
    )
    // Before: 20,350 ms in batches, the renewMany's call timeout.
    expect({ batch, rejected: outcome.rejected, prompt: took <= DEADLINE + 200 }).toEqual({
      batch,
      rejected: true,
      prompt: true,
    })
    await time.until(leaser.close())
  })
})

/**
 * Found by a review (session 49): a throw while a batch was sent or answered (timers arming its
 * timeout, an element of the driver's reply) left the batch's leases, or those after the element,
 * without an outcome: in a batch for good, never renewed again, and lost at their deadline.
 */
describe('every lease of a batch gets its outcome, whatever throws', () => {
  const unhandled = collectUnhandledRejections()

  test('timers that throw as the batch call is timed: a failed attempt, retried', async () => {
    const time = new ManualTime()
    const CALL_TIMEOUT = 777
    let throwNext = false
    const timers = {
      now: () => time.now(),
      wallNow: () => time.wallNow(),
      setTimeout: (callback: () => void, ms: number) => {
        if (throwNext && ms === CALL_TIMEOUT) {
          throwNext = false
          throw new Error('timers refused')
        }
        return time.setTimeout(callback, ms)
      },
      clearTimeout: (handle: unknown) => time.clearTimeout(handle),
    }
    const { leaser, backend, named } = setup({ batch: true, time, timers, callTimeoutMs: CALL_TIMEOUT })
    const lease = await leaser.acquire('job')
    await time.advance(INTERVAL / 2)
    throwNext = true
    await time.advance(3 * TTL)
    expect(throwNext).toBe(false)
    expect(backend.calls.renewMany).toBeGreaterThan(3)
    expect(lease.held).toBe(true)
    expect(named('lost')).toEqual([])
    expect(unhandled).toEqual([])
    await time.until(leaser.close())
  })

  test('timers that throw as the backoff after a failed batch is armed: renewed again all the same', async () => {
    const time = new ManualTime()
    let throwNext = false
    const timers = {
      now: () => time.now(),
      wallNow: () => time.wallNow(),
      setTimeout: (callback: () => void, ms: number) => {
        // The first backoff (its bound is retry.initialDelayMs, 50 ms; random 0.5: 25 ms).
        if (throwNext && ms === 25) {
          throwNext = false
          throw new Error('timers refused')
        }
        return time.setTimeout(callback, ms)
      },
      clearTimeout: (handle: unknown) => time.clearTimeout(handle),
    }
    const { leaser, backend, named } = setup({ batch: true, time, timers })
    const lease = await leaser.acquire('job')
    backend.failNext('renewMany', 1)
    throwNext = true
    await time.advance(3 * TTL)
    expect(throwNext).toBe(false)
    expect(lease.held).toBe(true)
    expect(named('lost')).toEqual([])
    expect(unhandled).toEqual([])
    await time.until(leaser.close())
  })

  test("an element of the driver's reply that throws when read fails the batch, not the leases after it", async () => {
    const { time, backend, leaser, named } = setup({ batch: true })
    const leases = await Promise.all([leaser.acquire('a'), leaser.acquire('b'), leaser.acquire('c')])
    const renewMany = backend.inner.renewMany!.bind(backend.inner)
    let once = true
    backend.inner.renewMany = async (records, ttlMs, options) => {
      const outcomes = await renewMany(records, ttlMs, options)
      if (!once) return outcomes
      once = false
      Object.defineProperty(outcomes, 1, {
        get() {
          throw new Error('driver reply element unreadable')
        },
      })
      return outcomes
    }
    await time.advance(3 * TTL)
    expect(leases.map((lease) => lease.held)).toEqual([true, true, true])
    expect(named('lost')).toEqual([])
    expect(unhandled).toEqual([])
  })
})
