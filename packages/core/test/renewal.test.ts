import { InvalidArgumentError, isFencedError, isLeaseExpiredError, isLeaseHeldError } from '@worklease/spec'
import { InjectedFaultError } from '@worklease/testkit'
import { describe, expect, test } from 'vitest'
import { keepAliveState } from '../src/abortable.js'
import { isLeaseLostError, type LeaseLostError } from '../src/index.js'
import type { ManualTime } from './manual-time.js'
import {
  bytes,
  collectUncaughtExceptions,
  collectUnhandledRejections,
  DEADLINE,
  INTERVAL,
  setup,
  TTL,
  text,
  track,
} from './setup.js'

describe('renewal', () => {
  test('renews in the background so the lease outlives many ttls', async () => {
    const { time, backend, leaser, other, named } = setup()
    const lease = await leaser.acquire('job')
    await time.advance(10 * TTL)
    expect(lease.held).toBe(true)
    expect(lease.signal.aborted).toBe(false)
    // One renew per interval, from the start of the previous one.
    expect(backend.calls.renew).toBe(Math.floor((10 * TTL) / INTERVAL))
    expect(named('renewed')).toHaveLength(backend.calls.renew)
    await expect(other.acquire('job', 'worker-b', TTL)).rejects.toSatisfy(isLeaseHeldError)
  })

  test('jitter only shortens the renew interval: even the largest draw renews before it', async () => {
    const { time, backend, leaser } = setup({ renewJitter: 0.5, random: () => 0.99 })
    await leaser.acquire('job')
    // Due at INTERVAL × (1 − 0.5 × 0.99), about 168 ms: never later than INTERVAL.
    await time.advance(160)
    expect(backend.calls.renew).toBe(0)
    await time.advance(10)
    expect(backend.calls.renew).toBe(1)
  })

  test.each([
    ['renew', false],
    ['renewMany', true],
  ] as const)(
    'another worklease error from %s is the loss "rejected": not retried as a store failure',
    async (target, batch) => {
      const { time, backend, leaser, named } = setup({ batch })
      const lease = await leaser.acquire('job')
      const refusal = new InvalidArgumentError('the driver refused the record')
      backend.failNext(target, 1, refusal)
      await time.advance(INTERVAL + 100)
      expect(backend.calls[target]).toBe(1)
      expect(named('renewFailed')).toHaveLength(0)
      expect(named('lost').map(({ event }) => event.reason)).toEqual(['rejected'])
      expect(lease.held).toBe(false)
      expect(lease.lossError?.reason).toBe('rejected')
      expect(lease.lossError?.cause).toBe(refusal)
      expect(lease.signal.reason).toBe(lease.lossError)
    },
  )

  test('a slow renew overtaken by a checkpoint still leaves the next renew scheduled', async () => {
    const { time, backend, leaser, named } = setup({ callTimeoutMs: 600 })
    const lease = await leaser.acquire('job')
    // Each renew is answered 400 ms after it was sent: longer than the interval, within the call timeout.
    backend.setReplyLatency(400, 'renew')
    await time.advance(INTERVAL + 20)
    await lease.checkpoint(bytes('overtakes'))
    await time.advance(5 * TTL)
    expect(named('lost')).toHaveLength(0)
    expect(lease.held).toBe(true)
    expect(backend.calls.renew).toBeGreaterThan(5)
  })

  test('a renew whose reply was lost (applied, but the call failed) is retried and the lease stays held', async () => {
    const { time, backend, leaser, named, store } = setup()
    const lease = await leaser.acquire('job')
    backend.loseNextReplies('renew')
    await time.advance(INTERVAL)
    expect(backend.calls.renew).toBe(1)
    // The write landed even though the caller saw an error.
    expect(store.leases.get('job')!.expiresAtMs).toBe(time.wall.now() + TTL)
    expect(named('renewFailed')).toHaveLength(1)
    expect(named('renewFailed')[0]!.event.error).toBeInstanceOf(InjectedFaultError)
    // Retried after a backoff of 25 ms (cap 50, random 0.5); same token, so the retry succeeds.
    await time.advance(25)
    expect(backend.calls.renew).toBe(2)
    expect(named('renewed')).toHaveLength(1)
    await time.advance(5 * TTL)
    expect(lease.held).toBe(true)
    expect(named('lost')).toHaveLength(0)
    expect(lease.fencingToken).toBe(1n)
  })

  test('the store down for less than the ttl: renews are retried and the lease survives', async () => {
    const { time, backend, leaser, named } = setup()
    const lease = await leaser.acquire('job')
    backend.setDown(true)
    await time.advance(800)
    expect(lease.held).toBe(true)
    // The renew at 333 and its retries, each backoff twice the one before (25, 50, 100 ms) and at
    // most half the time left to the deadline at 900 (196 ms, not 200), all fail, numbered in order,
    // each saying how long the lease has left.
    expect(named('renewFailed').map(({ at, event }) => [at, event.attempt, event.remainingMs])).toEqual([
      [333, 1, 567],
      [358, 2, 542],
      [408, 3, 492],
      [508, 4, 392],
      [704, 5, 196],
    ])
    backend.setDown(false)
    await time.advance(50) // the next retry, at 802, is within half the time left to the deadline
    expect(named('renewed')).toHaveLength(1)
    expect(lease.held).toBe(true)
    await time.advance(5 * TTL)
    expect(lease.held).toBe(true)
    expect(named('lost')).toHaveLength(0)
  })

  test.each(['error', 'hang'] as const)(
    'the store down (%s) for longer than the ttl: lost at the local deadline, before a successor can get in',
    async (mode) => {
      const { time, backend, leaser, other, named } = setup()
      const lease = await leaser.acquire('job')
      backend.setDown(true, mode)
      let successorAtLoss: Promise<unknown> | undefined
      leaser.on('lost', () => {
        // MemoryBackend decides synchronously, so this is the store's view at the very moment of loss.
        successorAtLoss = other.acquire('job', 'worker-b', TTL).catch((error: unknown) => error)
      })
      await time.advance(DEADLINE - 1)
      expect(lease.held).toBe(true)
      await time.advance(1)
      expect(lease.signal.aborted).toBe(true)
      const reason = lease.signal.reason as LeaseLostError
      expect(isLeaseLostError(reason)).toBe(true)
      expect(reason.reason).toBe('deadline')
      // With the store refusing, the loss carries the last store error; with it hanging, there is none.
      if (mode === 'error') expect(reason.cause).toBeInstanceOf(InjectedFaultError)
      expect(named('lost')).toHaveLength(1)
      expect(named('lost')[0]!.at).toBe(DEADLINE)
      expect(isLeaseHeldError(await successorAtLoss)).toBe(true)
      // Once the backend's expiry passed, the successor gets in with a higher token...
      await time.advance(TTL - DEADLINE)
      const successor = await other.acquire('job', 'worker-b', TTL)
      expect(successor.fencingToken).toBe(2n)
      // ...and the lost holder never renews or re-acquires behind the user's back.
      const renews = backend.calls.renew
      backend.setDown(false)
      await time.advance(5 * TTL)
      expect(backend.calls.renew).toBe(renews)
      expect(backend.calls.acquire).toBe(1)
      await expect(lease.checkpoint(bytes('x'))).rejects.toBe(reason)
    },
  )

  test('a process pause longer than the ttl: reported lost at once, the successor has a higher token', async () => {
    const { time, backend, leaser, other, named } = setup()
    const lease = await leaser.acquire('job')
    time.jump(2 * TTL) // no timer ran meanwhile
    expect(lease.signal.aborted).toBe(true)
    expect((lease.signal.reason as LeaseLostError).reason).toBe('deadline')
    expect(named('lost')).toHaveLength(1)
    const successor = await other.acquire('job', 'worker-b', TTL)
    expect(successor.fencingToken).toBeGreaterThan(lease.fencingToken)
    await time.advance(0) // the overdue timers fire now
    expect(backend.calls.renew).toBe(0)
    expect(named('lost')).toHaveLength(1)
  })

  test('a system suspend longer than the ttl (the monotonic clock stood still): lost at the next look', async () => {
    const { time, backend, leaser, other, named } = setup()
    const lease = await leaser.acquire('job')
    await time.advance(100)
    time.suspend(2 * TTL)
    expect(lease.signal.aborted).toBe(true)
    expect((lease.signal.reason as LeaseLostError).reason).toBe('deadline')
    expect(named('lost')).toHaveLength(1)
    const successor = await other.acquire('job', 'worker-b', TTL)
    expect(successor.fencingToken).toBeGreaterThan(lease.fencingToken)
    await time.advance(5 * TTL)
    expect(backend.calls.renew).toBe(0)
  })

  test('after a system suspend, the next timer declares the loss without anyone reading the lease', async () => {
    const { time, backend, leaser, named } = setup()
    await leaser.acquire('job')
    time.suspend(DEADLINE) // the wall-clock deadline has just passed, the monotonic one is 900 ms away
    await time.advance(INTERVAL) // the renew timer fires, checks the deadline first
    expect(named('lost')).toHaveLength(1)
    expect(named('lost')[0]!.event.reason).toBe('deadline')
    expect(backend.calls.renew).toBe(0)
  })

  test.each([
    ['a system suspend', (time: ManualTime) => time.suspend(DEADLINE)],
    [
      "this host's wall clock stepped forward",
      (time: ManualTime) => {
        time.localWallOffset += DEADLINE
      },
    ],
  ])(
    'after %s past the deadline, a kept signal aborts within a deadline window, not at the next renewal',
    async (_, step) => {
      for (const batch of [false, true]) {
        const { time, leaser, named } = setup({ batch })
        const lease = await leaser.acquire('job')
        const signal = lease.signal // kept, as a caller hands it to its writes
        await time.advance(10)
        step(time)
        // The deadline window is a tenth of the usable ttl (90 ms); the renewal is due at 333 ms.
        await time.advance(100)
        expect({
          batch,
          aborted: signal.aborted,
          lost: named('lost').map(({ event }) => event.reason),
        }).toEqual({
          batch,
          aborted: true,
          lost: ['deadline'],
        })
        await time.until(leaser.close())
      }
    },
  )

  test('a renew reply that arrives after a system suspend past the deadline is not trusted', async () => {
    const { time, backend, leaser, named } = setup()
    const lease = await leaser.acquire('job')
    backend.setReplyLatency(10, 'renew')
    await time.advance(INTERVAL) // the renew is applied, its reply is on its way
    time.suspend(2 * TTL)
    await time.advance(10)
    expect(lease.held).toBe(false)
    expect(named('renewed')).toHaveLength(0)
    expect(named('lost')[0]!.event.reason).toBe('deadline')
  })

  test('a wall clock stepped backward never extends the lease', async () => {
    const { time, backend, leaser, named } = setup()
    const lease = await leaser.acquire('job')
    backend.setDown(true)
    time.localWallOffset -= 10 * TTL
    await time.advance(DEADLINE - 1)
    expect(lease.held).toBe(true)
    await time.advance(1)
    expect(lease.held).toBe(false)
    expect(named('lost')[0]!.at).toBe(DEADLINE)
  })

  test('a wall clock stepped forward shortens the lease by that much (a safe false alarm)', async () => {
    const { time, backend, leaser, named } = setup()
    const lease = await leaser.acquire('job')
    backend.setDown(true)
    time.localWallOffset += 300
    expect(lease.remainingMs()).toBe(DEADLINE - 300)
    await time.advance(DEADLINE - 301)
    expect(lease.held).toBe(true)
    await time.advance(1)
    expect(named('lost')).toHaveLength(1)
    expect(named('lost')[0]!.at).toBe(DEADLINE - 300)
  })

  test('a renew reply that arrives after a pause past the deadline is not trusted', async () => {
    const { time, backend, leaser, named } = setup()
    const lease = await leaser.acquire('job')
    backend.setReplyLatency(10, 'renew')
    await time.advance(INTERVAL) // the renew is applied, its reply is on its way
    expect(backend.calls.renew).toBe(1)
    time.jump(2 * TTL)
    await time.advance(0) // the reply arrives first, then the watchdog
    expect(lease.held).toBe(false)
    expect(named('renewed')).toHaveLength(0)
    expect(named('lost')).toHaveLength(1)
    expect(named('lost')[0]!.event.reason).toBe('deadline')
  })

  test('a slow renew does not hold the lease past the local deadline', async () => {
    const { time, backend, leaser, named } = setup({ callTimeoutMs: 5_000 })
    const lease = await leaser.acquire('job')
    // Longer than the call timeout, so only the call's signal can end it early.
    backend.setLatency(10 * TTL, 'renew')
    await time.advance(DEADLINE)
    expect(lease.held).toBe(false)
    expect(named('lost')[0]!.at).toBe(DEADLINE)
    // The runner no longer waits for the call; the backend hears through the call's signal at its
    // timeout (shared by calls started within a sixteenth of it, so at most that much later).
    const sentAt = INTERVAL
    await time.advance(Math.max(0, sentAt + 5_000 - DEADLINE - 1))
    expect(backend.log.filter((entry) => entry.outcome === 'pending')).toHaveLength(1)
    await time.advance(5_000 / 16 + 1)
    expect(backend.log.filter((entry) => entry.outcome === 'pending')).toHaveLength(0)
  })

  test('FENCED aborts at once, with no retry and no re-acquire', async () => {
    const { time, backend, leaser, ahead } = setup()
    const lease = await leaser.acquire('job')
    // A successor whose clock runs ahead takes the lease over.
    await ahead.acquire('job', 'worker-b', TTL)
    await time.advance(INTERVAL)
    expect(lease.signal.aborted).toBe(true)
    const reason = lease.signal.reason as LeaseLostError
    expect(reason.reason).toBe('fenced')
    expect(isFencedError(reason.cause)).toBe(true)
    await time.advance(5 * TTL)
    expect(backend.calls.renew).toBe(1)
    expect(backend.calls.acquire).toBe(1)
  })

  test('LEASE_EXPIRED aborts at once and does not re-acquire', async () => {
    const { time, backend, leaser } = setup()
    const lease = await leaser.acquire('job')
    time.wallOffset += 5 * TTL // the store's clock moves on; this process was not paused
    await time.advance(INTERVAL)
    const reason = lease.signal.reason as LeaseLostError
    expect(reason.reason).toBe('expired')
    expect(isLeaseExpiredError(reason.cause)).toBe(true)
    await time.advance(5 * TTL)
    expect(backend.calls.renew).toBe(1)
    expect(backend.calls.acquire).toBe(1)
  })

  test('expiry is counted from the start of the last successful renew, not its reply or a failed attempt', async () => {
    const { time, backend, leaser, named } = setup()
    const lease = await leaser.acquire('job')
    backend.setLatency(100, 'renew')
    await time.advance(INTERVAL + 100) // renew #1 started at 333, answered at 433: deadline 1233
    expect(named('renewed')).toHaveLength(1)
    backend.setDown(true)
    await time.advance(DEADLINE - 101) // t = 1232: the renews since 666 failed
    expect(lease.held).toBe(true)
    await time.advance(1)
    expect(lease.held).toBe(false)
    expect(named('lost')[0]!.at).toBe(INTERVAL + DEADLINE)
  })
})

describe('a random that throws', () => {
  const thrown = collectUncaughtExceptions()
  const unhandled = collectUnhandledRejections()

  // Found by a review (session 41): a throw from `random` as a renewal was scheduled rejected the
  // renewal's own promise, unhandled, and nothing renewed again (batched, the rest of the chunk was
  // never scheduled either). Drawn for a new lease, it failed an acquire whose lease was taken.
  test.each([
    ['renew', false],
    ['renewMany', true],
  ] as const)(
    'once, as a %s is scheduled: it is rethrown, and costs its jitter, not the lease',
    async (_, batch) => {
      const broke = new Error('random broke once')
      let draws = 0
      const random = () => {
        if (++draws === 3) throw broke
        return 0.5
      }
      const { time, backend, leaser } = setup({ batch, renewJitter: 0.2, random })
      const leases = [await leaser.acquire('a'), await leaser.acquire('b')]
      await time.advance(10 * TTL)
      expect(leases.map((lease) => lease.held)).toEqual([true, true])
      expect(backend.calls[batch ? 'renewMany' : 'renew']).toBeGreaterThan(batch ? 20 : 40)
      await new Promise((resolve) => setImmediate(resolve))
      expect(thrown).toEqual([broke])
      expect(unhandled).toEqual([])
    },
  )
})

describe('ordering', () => {
  test('release waits for an in-flight renew and never races it', async () => {
    const { time, backend, leaser, other } = setup()
    const lease = await leaser.acquire('job')
    backend.setLatency(50, 'renew')
    await time.advance(INTERVAL) // renew in flight until 383
    const released = track(lease.release())
    await time.advance(10)
    expect(backend.calls.release).toBe(0)
    await time.advance(40)
    expect(released.settled).toBe(true)
    expect(backend.log.map((entry) => `${entry.operation}:${entry.outcome}`)).toEqual([
      'acquire:ok',
      'renew:ok',
      'release:ok',
    ])
    expect(lease.held).toBe(false)
    expect(lease.lossError).toBeUndefined()
    expect((lease.signal.reason as LeaseLostError).reason).toBe('released')
    // Released at once for the successor, with a clean handoff.
    const successor = await other.acquire('job', 'worker-b', TTL)
    expect(successor.fencingToken).toBe(2n)
    expect((await other.readCheckpoint(successor)).cleanHandoff).toBe(true)
    // Every timer of the lease was cleared.
    await time.advance(5 * TTL)
    expect(time.pending).toBe(0)
    expect(backend.calls.renew).toBe(1)
  })

  test('a release requested while a failed renew waits out its backoff does not wait for it', async () => {
    const { time, backend, leaser, named } = setup({ retry: { initialDelayMs: 5_000, maxDelayMs: 5_000 } })
    const lease = await leaser.acquire('job')
    backend.failNext('renew')
    await time.advance(INTERVAL) // the renew failed; its retry waits min(2500, (900 - 333) / 2) ms
    expect(named('renewFailed')).toHaveLength(1)
    await time.advance(10)
    const released = track(lease.release())
    await time.advance(0)
    expect(released.settled).toBe(true)
    expect(backend.log.map((entry) => `${entry.operation}:${entry.outcome}`)).toEqual([
      'acquire:ok',
      'renew:error',
      'release:ok',
    ])
    expect(lease.lossError).toBeUndefined()
    // The backoff's timer went with it: once close cleared the Leaser's shared ones, none is left.
    await leaser.close()
    expect(time.pending).toBe(0)
  })

  test("a pending release keeps the process alive (a ref'd handle) until it settles", async () => {
    const { time, backend, leaser } = setup()
    const lease = await leaser.acquire('job')
    // Every timer of the runner is unref'd, so only the release's own hold can keep the process up.
    // Read the runner's hold itself: a count of the process's ref'd timers includes the test
    // runner's own, which come and go under load.
    const before = keepAliveState().pending
    backend.setLatency(50, 'release')
    const released = track(lease.release())
    await time.advance(10)
    expect(released.settled).toBe(false)
    expect(keepAliveState()).toEqual({ pending: before + 1, refd: true })
    await time.advance(40)
    expect(released.settled).toBe(true)
    expect(keepAliveState()).toEqual({ pending: before, refd: before > 0 })
  })

  test('checkpoints and reads never overlap each other (renewals go on beside them)', async () => {
    const { time, backend, leaser } = setup()
    const lease = await leaser.acquire('job')
    backend.setLatency(40, '*')
    // The latency happens before the inner call, so a call is 'pending' in the log for 40 ms.
    await time.advance(INTERVAL - 10)
    const all = Promise.all([
      lease.checkpoint(bytes('1')),
      lease.checkpoint(bytes('2')),
      lease.readCheckpoint(),
      lease.checkpoint(bytes('3')),
    ])
    let maxPending = 0
    for (let i = 0; i < 60; i++) {
      await time.advance(5)
      const pending = backend.log.filter(
        (entry) => entry.outcome === 'pending' && entry.operation !== 'renew',
      )
      maxPending = Math.max(maxPending, pending.length)
    }
    const [, , read] = await all
    expect(maxPending).toBe(1)
    expect(text(read.state)).toBe('2')
    const last = lease.readCheckpoint()
    await time.until(last)
    expect(text((await last).state)).toBe('3')
  })

  test('a checkpoint counts as a renewal and moves the next renew and the deadline', async () => {
    const { time, backend, leaser, named } = setup()
    const lease = await leaser.acquire('job')
    await time.advance(200)
    await lease.checkpoint(bytes('step 1'))
    expect(named('renewed').map((e) => e.event.op)).toEqual(['checkpoint'])
    await time.advance(INTERVAL - 1) // t = 532: the renew is due at 533, not 333
    expect(backend.calls.renew).toBe(0)
    await time.advance(1)
    expect(backend.calls.renew).toBe(1)
    backend.setDown(true)
    await time.advance(DEADLINE - 1) // deadline = 533 + 900
    expect(lease.held).toBe(true)
    await time.advance(1)
    expect(lease.held).toBe(false)
  })

  test('a checkpoint the store keeps failing (renewals fine) backs off, then gives up one ttl less the margin after its first attempt', async () => {
    const { time, backend, leaser, named } = setup()
    const lease = await leaser.acquire('job')
    backend.failNext('checkpoint', 1_000)
    const saving = track(lease.checkpoint(bytes('never stored')))
    await time.advance(DEADLINE - 1)
    expect(saving.settled).toBe(false)
    // Each backoff twice the one before: 25, 50, 100, 200, 400 ms.
    const attempts = named('renewFailed').filter(({ event }) => event.op === 'checkpoint')
    expect(attempts.map(({ at, event }) => [at, event.attempt])).toEqual([
      [0, 1],
      [25, 2],
      [75, 3],
      [175, 4],
      [375, 5],
      [775, 6],
    ])
    await time.advance(1)
    expect(saving.error).toBeInstanceOf(InjectedFaultError)
    // The renewals kept the lease: the store failed checkpoints, it did not take the lease away.
    expect(lease.held).toBe(true)
    expect(backend.calls.checkpoint).toBe(6)
  })

  test('a checkpoint whose reply was lost is retried; the state is stored once', async () => {
    const { time, backend, leaser, other } = setup()
    const lease = await leaser.acquire('job')
    backend.loseNextReplies('checkpoint')
    const done = track(lease.checkpoint(bytes('saved')))
    await time.advance(25)
    expect(done.settled && !done.rejected).toBe(true)
    expect(backend.calls.checkpoint).toBe(2)
    await lease.release()
    const successor = await other.acquire('job', 'worker-b', TTL)
    expect(text((await other.readCheckpoint(successor)).state)).toBe('saved')
  })

  test('a fenced checkpoint rejects with LeaseLostError and aborts the signal', async () => {
    const { leaser, ahead } = setup()
    const lease = await leaser.acquire('job')
    await ahead.acquire('job', 'worker-b', TTL)
    const error = await lease.checkpoint(bytes('late')).catch((e: unknown) => e)
    expect(isLeaseLostError(error)).toBe(true)
    expect((error as LeaseLostError).reason).toBe('fenced')
    expect(lease.signal.reason).toBe(error)
    await expect(lease.readCheckpoint()).rejects.toBe(error)
  })

  test.each([
    ['Uint8Array', (value: string) => bytes(value)],
    // Buffer#slice is a view, not a copy.
    ['Buffer', (value: string) => Buffer.from(value)],
  ])(
    'checkpoint stores the bytes it was given, even if the caller reuses its %s while it is queued',
    async (_, make) => {
      const { time, backend, leaser, other } = setup()
      const lease = await leaser.acquire('job')
      backend.setLatency(50, 'renew')
      await time.advance(INTERVAL + 10) // a renew is in flight: the checkpoint waits behind it
      const buffer = make('cursor=42')
      const done = track(lease.checkpoint(buffer))
      buffer.fill(0x58) // the caller moves on and reuses its buffer
      await time.advance(50)
      expect(done.settled && !done.rejected).toBe(true)
      expect(backend.calls.checkpoint).toBe(1)
      await lease.release()
      const successor = await other.acquire('job', 'worker-b', TTL)
      expect(text((await other.readCheckpoint(successor)).state)).toBe('cursor=42')
    },
  )

  test('a checkpoint still queued when the lease is lost is never sent', async () => {
    const { time, backend, leaser } = setup({ callTimeoutMs: 5_000, checkpointTimeoutMs: 5_000 })
    const lease = await leaser.acquire('job')
    backend.setLatency(2 * TTL, ['renew', 'checkpoint'])
    const first = track(lease.checkpoint(bytes('first'))) // hangs until the local deadline
    const queued = track(lease.checkpoint(bytes('late')))
    await time.advance(DEADLINE)
    expect(first.rejected && queued.rejected).toBe(true)
    expect((queued.error as LeaseLostError).reason).toBe('deadline')
    expect(backend.calls.checkpoint).toBe(1)
  })

  test('a renew goes out on time while a slow checkpoint is in flight', async () => {
    const { time, backend, leaser } = setup({ checkpointTimeoutMs: 5_000 })
    const lease = await leaser.acquire('job')
    backend.setLatency(600, 'checkpoint')
    await time.advance(10)
    const done = track(lease.checkpoint(bytes('slow')))
    await time.advance(INTERVAL - 10)
    expect(backend.log.map((entry) => `${entry.operation}:${entry.outcome}`)).toEqual([
      'acquire:ok',
      'checkpoint:pending',
      'renew:ok',
    ])
    await time.advance(300)
    expect(done.settled && !done.rejected).toBe(true)
    expect(lease.held).toBe(true)
  })

  // Found by a review (session 38): release() stopped renewals at once, then waited behind the
  // checkpoint; a checkpoint slower than what was left of the ttl lost the lease, no release sent.
  test('a release waiting behind a slow checkpoint keeps the lease renewed, then releases it', async () => {
    const { time, backend, leaser, store, named } = setup({ checkpointTimeoutMs: 2_000 })
    const lease = await leaser.acquire('job')
    backend.setLatency(1_200, 'checkpoint')
    const checkpoint = track(lease.checkpoint(bytes('slow')))
    await time.advance(10)
    const release = track(lease.release())
    await time.advance(2_000)
    expect(checkpoint.settled && release.settled).toBe(true)
    expect(named('lost')).toEqual([])
    expect(backend.calls.release).toBe(1)
    expect(backend.calls.renew).toBeGreaterThan(0)
    expect(store.leases.get('job')?.released).toBe(true)
  })

  test('checkpoint validates the state before any round trip', async () => {
    const { backend, leaser } = setup()
    const lease = await leaser.acquire('job')
    await expect(lease.checkpoint('text' as unknown as Uint8Array)).rejects.toThrow(/Uint8Array/)
    expect(backend.calls.checkpoint).toBe(0)
    expect(lease.held).toBe(true)
  })

  test('release is idempotent, and after a loss it resolves without calling the store', async () => {
    const { time, backend, leaser } = setup()
    const a = await leaser.acquire('a')
    await Promise.all([a.release(), a.release()])
    await a.release()
    expect(backend.calls.release).toBe(1)
    const b = await leaser.acquire('b')
    time.jump(2 * TTL)
    await b.release()
    expect(backend.calls.release).toBe(1)
    expect(b.lossError?.reason).toBe('deadline')
  })

  test('a release whose reply was lost is retried, and the FENCED it then gets means released', async () => {
    const { time, backend, leaser, named } = setup()
    const lease = await leaser.acquire('job')
    backend.loseNextReplies('release')
    const done = track(lease.release())
    await time.advance(100)
    expect(done.settled).toBe(true)
    expect(backend.calls.release).toBe(2)
    expect(lease.lossError).toBeUndefined()
    expect(named('released')).toHaveLength(1)
    expect(named('lost')).toHaveLength(0)
  })

  test('abandon stops renewals without releasing: the successor sees an unclean handoff', async () => {
    const { time, backend, leaser, other } = setup()
    const lease = await leaser.acquire('job')
    lease.abandon()
    expect((lease.signal.reason as LeaseLostError).reason).toBe('abandoned')
    expect({ held: lease.held, remainingMs: lease.remainingMs() }).toEqual({ held: false, remainingMs: 0 })
    await expect(other.acquire('job', 'worker-b', TTL)).rejects.toSatisfy(isLeaseHeldError)
    await time.advance(TTL)
    expect(backend.calls.renew).toBe(0)
    const successor = await other.acquire('job', 'worker-b', TTL)
    expect((await other.readCheckpoint(successor)).cleanHandoff).toBe(false)
    expect(time.pending).toBe(0)
  })
})
