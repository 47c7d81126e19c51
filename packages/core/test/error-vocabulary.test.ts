import { ErrorCode, isWorkleaseError } from '@worklease/spec'
import { describe, expect, test } from 'vitest'
import * as core from '../src/index.js'
import { bytes, setup } from './setup.js'

// Issue 20: every error a Leaser user meets has a stable code in spec's list and passes
// isWorkleaseError; core re-exports the guards; a clean end of a lease is not reported as a loss.
describe('one error vocabulary', () => {
  test('the runner errors carry codes from spec and pass isWorkleaseError', async () => {
    const { leaser, time } = setup()
    const lease = await leaser.acquire('job')
    const closing = leaser.close()
    await time.advance(10)
    await closing
    const closed = await leaser.acquire('other').catch((error: unknown) => error)
    expect(isWorkleaseError(closed, ErrorCode.LEASER_CLOSED)).toBe(true)
    expect(isWorkleaseError(lease.lossError, ErrorCode.LEASE_LOST)).toBe(true)
  })

  test('what is not a lease outcome carries no lease code: a store that never answers, an undecodable checkpoint', async () => {
    const { leaser, backend, time, memory } = setup({ callTimeoutMs: 20, retry: { maxAttempts: 2 } })
    backend.setDown(true, 'hang')
    const acquiring = leaser.acquire('job').catch((error: unknown) => error)
    await time.until(acquiring)
    const timedOut = await acquiring
    expect(timedOut).toBeInstanceOf(DOMException)
    expect(timedOut).toMatchObject({ name: 'TimeoutError' })
    expect(isWorkleaseError(timedOut)).toBe(false)
    backend.setDown(false)

    const record = await memory.acquire('json', 'writer', 1_000)
    await memory.checkpoint(record, bytes('not json'), 1_000)
    await memory.release(record)
    const reader = new core.Leaser({ backend: memory, ttlMs: 1_000, timers: time, codec: core.jsonCodec() })
    const reading = reader.run('json', (lease) => lease.readCheckpoint()).catch((error: unknown) => error)
    await time.until(reading)
    const undecodable = await reading
    expect(undecodable).toBeInstanceOf(TypeError)
    expect((undecodable as TypeError).cause).toBeInstanceOf(SyntaxError)
    expect(isWorkleaseError(undecodable)).toBe(false)
    await time.until(reader.close())
  })

  test('core re-exports the guards and the code list, so one package is enough', () => {
    for (const name of [
      'ErrorCode',
      'isWorkleaseError',
      'isLeaseHeldError',
      'isFencedError',
      'isLeaseExpiredError',
      'isInvalidArgumentError',
      'isTokensExhaustedError',
      'isLeaseEndedError',
    ]) {
      expect(core, name).toHaveProperty(name)
    }
  })

  test('after your own release the signal says the lease ended, not that it was lost', async () => {
    const { leaser } = setup()
    const lease = await leaser.acquire('job')
    await lease.release()
    expect(lease.signal.aborted).toBe(true)
    expect(core.isLeaseLostError(lease.signal.reason)).toBe(false)
    expect(isWorkleaseError(lease.signal.reason, ErrorCode.LEASE_ENDED)).toBe(true)
    expect(lease.signal.reason.reason).toBe('released')
    await expect(lease.checkpoint(bytes('late'))).rejects.toMatchObject({ code: 'LEASE_ENDED' })
    expect(lease.lossError).toBeUndefined()
  })

  test('abandon() ends the lease with reason abandoned, not a loss', async () => {
    const { leaser } = setup()
    const lease = await leaser.acquire('job')
    lease.abandon()
    expect(isWorkleaseError(lease.signal.reason, ErrorCode.LEASE_ENDED)).toBe(true)
    expect(lease.signal.reason.reason).toBe('abandoned')
  })

  test('renewFailed is about renewals only; a failed release or read is callFailed', async () => {
    const { leaser, backend, time, named } = setup()
    const failed: string[] = []
    leaser.on('callFailed', ({ op }) => failed.push(op))
    const lease = await leaser.acquire('job')
    await lease.readCheckpoint() // the acquire's own read: no call
    backend.failNext('readCheckpoint')
    const reading = lease.readCheckpoint()
    await time.advance(1_000)
    await reading
    backend.failNext('release')
    const releasing = lease.release()
    await time.advance(1_000)
    await releasing
    expect(named('renewFailed')).toHaveLength(0)
    expect(failed).toEqual(['readCheckpoint', 'release'])
  })
})
