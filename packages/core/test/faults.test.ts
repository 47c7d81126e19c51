import { type Backend, isLeaseHeldError } from '@worklease/spec'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { isLeaseLostError, type LeaseLostError, Leaser } from '../src/index.js'
import { setup, TTL, track } from './setup.js'

/** Unhandled rejections seen during one test. */
const unhandled: unknown[] = []
const onUnhandled = (reason: unknown) => unhandled.push(reason)
beforeEach(() => {
  unhandled.length = 0
  process.on('unhandledRejection', onUnhandled)
})
afterEach(() => {
  process.off('unhandledRejection', onUnhandled)
})

describe('close ends leases locally first', () => {
  test('every signal is aborted and held is false before the store hears of a release', async () => {
    const { time, leaser, memory } = setup()
    const seenAtRelease: { aborted: boolean; held: boolean }[] = []
    const a = await leaser.acquire('a')
    const b = await leaser.acquire('b')
    const leases = [a, b]
    const original = memory.release.bind(memory)
    memory.release = (record, options) => {
      const lease = leases.find((l) => l.workId === record.workId)!
      seenAtRelease.push({ aborted: lease.signal.aborted, held: lease.held })
      return original(record, options)
    }
    const closing = leaser.close()
    // Synchronously, before any round trip.
    expect(leases.map((l) => l.signal.aborted)).toEqual([true, true])
    expect(leases.map((l) => l.held)).toEqual([false, false])
    await time.until(closing)
    expect(seenAtRelease).toEqual([
      { aborted: true, held: false },
      { aborted: true, held: false },
    ])
  })

  test('close waits for a run callback to settle before it releases that lease', async () => {
    const { time, leaser, backend } = setup()
    const steps: string[] = []
    const running = track(
      leaser.run('job', async (lease) => {
        await new Promise((resolve) => lease.signal.addEventListener('abort', resolve))
        steps.push('callback saw the abort')
        await time.sleep(100) // winds down its current step
        steps.push(`callback settled, release calls so far: ${backend.calls.release}`)
      }),
    )
    await time.advance(10)
    const closing = track(leaser.close())
    await time.advance(99)
    expect(backend.calls.release).toBe(0)
    await time.advance(1)
    await time.advance(0)
    expect(steps).toEqual(['callback saw the abort', 'callback settled, release calls so far: 0'])
    expect(backend.calls.release).toBe(1)
    expect(closing.settled).toBe(true)
    expect((running.error as LeaseLostError).reason).toBe('closed')
  })

  test('a run callback that ignores its signal past the close timeout: its lease is left to expire', async () => {
    const { time, leaser, backend, other } = setup()
    track(leaser.run('job', () => time.sleep(10 * TTL)))
    await time.advance(10)
    const closing = track(leaser.close({ timeoutMs: 300 }))
    await time.advance(300)
    expect(closing.settled).toBe(true)
    expect(backend.calls.release).toBe(0)
    // Not released: the successor sees an unclean handoff, which is the truth.
    await time.advance(TTL)
    const successor = await other.acquire('job', 'worker-b', TTL)
    expect((await other.readCheckpoint(successor)).cleanHandoff).toBe(false)
  })
})

describe('acquire with a timeoutMs shorter than one round trip', () => {
  test('a free lease is acquired: the timeout bounds the waiting, not the first round trip', async () => {
    const { time, leaser, backend, other } = setup()
    backend.setLatency(100, 'acquire')
    const acquiring = track(leaser.acquire('job', { timeoutMs: 50 }))
    await time.advance(100)
    expect(acquiring.error).toBeUndefined()
    expect(acquiring.value?.fencingToken).toBe(1n)
    await acquiring.value!.release()
    // No token was burned by a take-and-release in the background.
    expect((await other.acquire('job', 'worker-b', TTL)).fencingToken).toBe(2n)
    expect(backend.calls.acquire).toBe(1)
  })

  test('on a held lease it still rejects with LEASE_HELD once the first reply came', async () => {
    const { time, leaser, backend, other } = setup()
    await other.acquire('job', 'worker-b', 60_000)
    backend.setLatency(100, 'acquire')
    const acquiring = track(leaser.acquire('job', { wait: true, timeoutMs: 50 }))
    await time.advance(100)
    expect(isLeaseHeldError(acquiring.error)).toBe(true)
    expect(backend.calls.acquire).toBe(1)
  })
})

describe('third-party backends that break the Promise contract', () => {
  const variants = [
    [
      'throws synchronously',
      () => {
        throw new Error('sync failure')
      },
    ],
    ['returns a non-promise', () => undefined],
  ] as const

  test.each(variants)(
    'a release that %s when freeing a late acquire: no unhandled rejection',
    async (_, release) => {
      const { time, memory } = setup()
      let slowCalls = 1
      const backend: Backend = {
        capabilities: memory.capabilities,
        acquire: async (workId, holderId, ttlMs) => {
          if (slowCalls-- > 0) await time.sleep(110)
          return memory.acquire(workId, holderId, ttlMs)
        },
        renew: (...args) => memory.renew(...args),
        checkpoint: (...args) => memory.checkpoint(...args),
        release: release as unknown as Backend['release'],
        readCheckpoint: (...args) => memory.readCheckpoint(...args),
      }
      const leaser = new Leaser({
        backend,
        ttlMs: TTL,
        holderId: 'worker-a',
        timers: time,
        callTimeoutMs: 100,
        random: () => 0.5, // the retry goes out at 125 ms, after the late acquire landed
      })
      const acquiring = track(leaser.acquire('job', { wait: true }))
      await time.advance(3 * TTL)
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(unhandled).toEqual([])
      expect(acquiring.settled).toBe(true)
    },
  )

  test.each(variants)(
    'a release that %s in lease.release and close: no unhandled rejection',
    async (_, release) => {
      const { time, memory } = setup()
      const backend: Backend = {
        capabilities: memory.capabilities,
        acquire: (...args) => memory.acquire(...args),
        renew: (...args) => memory.renew(...args),
        checkpoint: (...args) => memory.checkpoint(...args),
        release: release as unknown as Backend['release'],
        readCheckpoint: (...args) => memory.readCheckpoint(...args),
      }
      const leaser = new Leaser({ backend, ttlMs: TTL, holderId: 'worker-a', timers: time })
      const a = await leaser.acquire('a')
      await leaser.acquire('b')
      const released = track(a.release())
      const closing = track(leaser.close())
      await time.advance(2 * TTL)
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(unhandled).toEqual([])
      expect(released.settled && !released.rejected).toBe(true)
      expect(closing.settled && !closing.rejected).toBe(true)
      expect(time.pending).toBe(0)
    },
  )
})

describe('a release retried after a lost reply', () => {
  test('answering FENCED is "released, outcome unknown": run resolves with the result', async () => {
    const { time, leaser, backend, named } = setup()
    backend.loseNextReplies('release')
    const running = track(leaser.run('job', async () => 'result'))
    await time.advance(100)
    expect(backend.calls.release).toBe(2)
    expect(running.error).toBeUndefined()
    expect(running.value).toBe('result')
    expect(named('lost')).toHaveLength(0)
  })

  test('a FENCED on the first and only release attempt is still a takeover', async () => {
    const { time, leaser, store, backend } = setup()
    const { MemoryBackend } = await import('@worklease/memory')
    const ahead = new MemoryBackend({ store, clock: { now: () => time.wall.now() + 5 * TTL } })
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
})
