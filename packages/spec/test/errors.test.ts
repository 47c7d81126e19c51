import { describe, expect, test } from 'vitest'
import {
  ErrorCode,
  FencedError,
  InvalidArgumentError,
  isFencedError,
  isInvalidArgumentError,
  isLeaseExpiredError,
  isLeaseHeldError,
  isTokensExhaustedError,
  isWorkleaseError,
  LeaseExpiredError,
  LeaseHeldError,
  TokensExhaustedError,
  WorkleaseError,
} from '../src/index.js'

describe('error codes', () => {
  test('the codes are the stable uppercase strings of the contract', () => {
    expect(Object.values(ErrorCode).sort()).toEqual([
      'FENCED',
      'INVALID_ARGUMENT',
      'LEASER_CLOSED',
      'LEASE_ENDED',
      'LEASE_EXPIRED',
      'LEASE_HELD',
      'LEASE_LOST',
      'TOKENS_EXHAUSTED',
    ])
  })

  test.each([
    [new LeaseHeldError(), 'LEASE_HELD', 'LeaseHeldError'],
    [new FencedError(), 'FENCED', 'FencedError'],
    [new LeaseExpiredError(), 'LEASE_EXPIRED', 'LeaseExpiredError'],
    [new InvalidArgumentError('bad'), 'INVALID_ARGUMENT', 'InvalidArgumentError'],
    [new TokensExhaustedError(), 'TOKENS_EXHAUSTED', 'TokensExhaustedError'],
  ])('%s carries its code and name', (error, code, name) => {
    expect(error).toBeInstanceOf(WorkleaseError)
    expect(error).toBeInstanceOf(Error)
    expect(error.code).toBe(code)
    expect(error.name).toBe(name)
    expect(isWorkleaseError(error, code as ErrorCode)).toBe(true)
  })

  test('guards recognise errors from another copy of the package by code alone', () => {
    const foreign = Object.assign(new Error('from a duplicate install'), { code: 'FENCED' })
    expect(isFencedError(foreign)).toBe(true)
    expect(isWorkleaseError(foreign)).toBe(true)
    expect(isLeaseHeldError(foreign)).toBe(false)
  })

  // Found by a review (session 36): the guard threw the getter's error, and `else throw error` then
  // threw that instead of the error it was asked about.
  test('guards answer false for an object whose code cannot be read', () => {
    const { proxy, revoke } = Proxy.revocable({}, {})
    revoke()
    const lying = Object.defineProperty(new Error('x'), 'code', {
      get() {
        throw new Error('lying getter')
      },
    })
    for (const error of [proxy, lying]) {
      expect(isWorkleaseError(error)).toBe(false)
      expect(isFencedError(error)).toBe(false)
    }
  })

  test('guards reject look-alikes and non-errors', () => {
    expect(isWorkleaseError(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(false)
    expect(isWorkleaseError(null)).toBe(false)
    expect(isWorkleaseError('FENCED')).toBe(false)
    expect(isLeaseExpiredError(new FencedError())).toBe(false)
    expect(isInvalidArgumentError(new InvalidArgumentError('x'))).toBe(true)
  })

  test('LeaseHeldError carries the holder the store reported, and only when given', () => {
    const holder = { holderId: 'b', fencingToken: 7n, expiresAt: new Date(5), expiresInMs: 250 }
    const error = new LeaseHeldError('held', { holder, cause: 'x' })
    expect(error.holder).toBe(holder)
    expect(error.cause).toBe('x')
    expect('holder' in new LeaseHeldError()).toBe(false)
    expect(isTokensExhaustedError(new TokensExhaustedError())).toBe(true)
    expect(isTokensExhaustedError(error)).toBe(false)
  })

  test('a cause is kept', () => {
    const cause = new Error('socket hang up')
    expect(new FencedError('fenced', { cause }).cause).toBe(cause)
  })
})
