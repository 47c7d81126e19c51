import { MemoryBackend } from '@worklease/memory'
import { ErrorCode, isWorkleaseError } from '@worklease/spec'
import { describe, expect, test } from 'vitest'
import { Leaser } from '../src/index.js'
import { ManualTime } from './manual-time.js'

function setup() {
  const time = new ManualTime()
  const backend = new MemoryBackend({ clock: time.wall })
  const leaser = new Leaser({ backend, ttlMs: 1_000, holderId: 'worker-a', timers: time })
  return { time, backend, leaser }
}

describe('a signal made lazily says how the lease ended, whenever it is first read', () => {
  test('signal first read after a takeover is aborted with LEASE_LOST fenced', async () => {
    const { time, backend, leaser } = setup()
    const lease = await leaser.acquire('job')
    await backend.revoke('job')
    await time.advance(1_000)
    expect(lease.held).toBe(false)
    expect(lease.signal.aborted).toBe(true)
    expect(isWorkleaseError(lease.signal.reason, ErrorCode.LEASE_LOST)).toBe(true)
    expect(lease.signal.reason).toBe(lease.lossError)
  })

  test('signal first read after a local-deadline pass is aborted with LEASE_LOST deadline', async () => {
    const { time, leaser } = setup()
    const lease = await leaser.acquire('job')
    time.jump(5_000)
    const signal = lease.signal
    expect(signal.aborted).toBe(true)
    expect((signal.reason as { reason: string }).reason).toBe('deadline')
    expect(lease.held).toBe(false)
  })

  test('after close() began: held false, signal (read late) LEASE_LOST closed, not LEASE_ENDED', async () => {
    const { leaser } = setup()
    const lease = await leaser.acquire('job')
    const closing = leaser.close()
    expect(lease.held).toBe(false)
    expect(lease.signal.aborted).toBe(true)
    expect(isWorkleaseError(lease.signal.reason, ErrorCode.LEASE_LOST)).toBe(true)
    expect((lease.signal.reason as { reason: string }).reason).toBe('closed')
    await closing
    expect((lease.signal.reason as { reason: string }).reason).toBe('closed')
  })

  test('after release() began: signal read before and after gets the same LEASE_ENDED', async () => {
    const { leaser } = setup()
    const a = await leaser.acquire('a')
    const early = a.signal
    let heard: unknown
    early.addEventListener('abort', () => {
      heard = early.reason
    })
    const releasing = a.release()
    expect(a.held).toBe(false)
    expect(early.aborted).toBe(true)
    expect(isWorkleaseError(heard, ErrorCode.LEASE_ENDED)).toBe(true)
    await releasing
    const rejected = await a.checkpoint(new Uint8Array(1)).catch((error: unknown) => error)
    expect(rejected).toBe(heard)
    const b = await leaser.acquire('b')
    const releasingB = b.release()
    expect(b.held).toBe(false)
    expect(b.signal.aborted).toBe(true)
    expect(isWorkleaseError(b.signal.reason, ErrorCode.LEASE_ENDED)).toBe(true)
    await releasingB
  })

  test('abandon: LEASE_ENDED, and a loss after it does not turn the reason into LEASE_LOST', async () => {
    const { time, leaser } = setup()
    const lease = await leaser.acquire('job')
    lease.abandon()
    time.jump(5_000)
    expect(lease.held).toBe(false)
    expect(isWorkleaseError(lease.signal.reason, ErrorCode.LEASE_ENDED)).toBe(true)
    expect(lease.lossError).toBeUndefined()
  })

  test('a release whose store answers FENCED after a takeover: signal stays LEASE_ENDED, lossError set', async () => {
    const { backend, leaser } = setup()
    const lease = await leaser.acquire('job')
    await backend.revoke('job')
    await lease.release()
    expect(isWorkleaseError(lease.signal.reason, ErrorCode.LEASE_ENDED)).toBe(true)
    expect(isWorkleaseError(lease.lossError, ErrorCode.LEASE_LOST)).toBe(true)
  })

  test('pending acquire rejects with LEASER_CLOSED on close', async () => {
    const { backend, leaser } = setup()
    await backend.acquire('job', 'other', 100_000)
    const pending = leaser.acquire('job', { wait: true }).catch((error: unknown) => error)
    await leaser.close()
    expect(isWorkleaseError(await pending, ErrorCode.LEASER_CLOSED)).toBe(true)
  })

  test('pending acquire rejects with the caller signal reason', async () => {
    const { backend, leaser } = setup()
    await backend.acquire('job', 'other', 100_000)
    const controller = new AbortController()
    const pending = leaser
      .acquire('job', { wait: true, signal: controller.signal })
      .catch((error: unknown) => error)
    const why = new Error('mine')
    controller.abort(why)
    expect(await pending).toBe(why)
    const controller2 = new AbortController()
    const pending2 = leaser
      .acquire('job', { wait: true, signal: controller2.signal })
      .catch((error: unknown) => error)
    controller2.abort()
    const got = await pending2
    expect(got).toBeInstanceOf(DOMException)
    expect((got as DOMException).name).toBe('AbortError')
  })
})

/**
 * Found by a review (session 49): ending a lease that a pause had already carried past its deadline
 * skipped the deadline. release() aborted the signal with LEASE_ENDED though lossError said
 * "deadline"; abandon() reported no loss at all; close() said "closed" while the lost event said
 * "deadline".
 */
describe('a lease lost in a pause, then ended, is reported lost for the deadline', () => {
  async function pausedPastDeadline() {
    const { time, leaser } = setup()
    const lost: string[] = []
    const released: string[] = []
    leaser.on('lost', (event) => lost.push(event.reason))
    leaser.on('released', (event) => released.push(event.reason))
    const lease = await leaser.acquire('job')
    const signal = lease.signal // kept by the work, read before the pause
    time.jump(2_000) // nothing ran meanwhile
    return { time, leaser, lease, signal, lost, released }
  }

  test('release()', async () => {
    const { lease, signal, lost } = await pausedPastDeadline()
    await lease.release()
    expect(isWorkleaseError(signal.reason, ErrorCode.LEASE_LOST)).toBe(true)
    expect(signal.reason).toBe(lease.lossError)
    expect(lease.lossError?.reason).toBe('deadline')
    expect(lost).toEqual(['deadline'])
  })

  test('abandon()', async () => {
    const { time, lease, signal, lost, released } = await pausedPastDeadline()
    lease.abandon()
    await time.advance(0)
    expect(signal.reason).toBe(lease.lossError)
    expect(lease.lossError?.reason).toBe('deadline')
    expect(lost).toEqual(['deadline'])
    expect(released).toEqual([])
  })

  test('leaser.close()', async () => {
    const { leaser, lease, signal, lost } = await pausedPastDeadline()
    await leaser.close()
    expect(signal.reason).toBe(lease.lossError)
    expect(lease.lossError?.reason).toBe('deadline')
    expect(lost).toEqual(['deadline'])
  })
})
