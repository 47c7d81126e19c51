import { describe, expect, test } from 'vitest'
import { isLeaseHeldError, leaseHeldBy } from '../src/index.js'

describe('leaseHeldBy', () => {
  const lease = { holderId: 'a', fencingToken: 7n, expiresAtMs: 1_000 }

  test('names the lease, with the time it has left', () => {
    const error = leaseHeldBy({ ...lease, expiresInMs: 250 })
    expect(isLeaseHeldError(error)).toBe(true)
    expect(error.holder).toEqual({
      holderId: 'a',
      fencingToken: 7n,
      expiresAt: new Date(1_000),
      expiresInMs: 250,
    })
    expect(Object.hasOwn(error, 'cause')).toBe(false)
  })

  test('a lease that expired or was released since the refusal expires in 0 ms', () => {
    const cause = new Error('E11000')
    const error = leaseHeldBy({ ...lease, expiresInMs: -40 }, cause)
    expect(error.holder?.expiresInMs).toBe(0)
    expect(error.cause).toBe(cause)
  })

  test('a revoked lease, or one without a valid expiry, names nobody', () => {
    expect(leaseHeldBy({ ...lease, holderId: '', expiresInMs: 0 }).holder).toBeUndefined()
    expect(leaseHeldBy({ ...lease, expiresAtMs: Number.NaN, expiresInMs: 0 }).holder).toBeUndefined()
    expect(leaseHeldBy({ ...lease, expiresInMs: Number.NaN }).holder).toBeUndefined()
  })
})
