import { describe, expect, test } from 'vitest'
import { RoundTripFailer } from '../src/index.js'

describe('RoundTripFailer', () => {
  test('fails the round trip after the ones it skips, once', () => {
    const failer = new RoundTripFailer()
    expect(failer.take()).toBe(false)
    failer.failNextCall()
    expect([failer.take(), failer.take()]).toEqual([true, false])
    failer.failNextCall(2)
    expect([failer.take(), failer.take(), failer.take(), failer.take()]).toEqual([false, false, true, false])
  })

  test.each([-1, 1.5, Number.NaN, '1'])('refuses %j round trips to skip', (skip) => {
    expect(() => new RoundTripFailer().failNextCall(skip as number)).toThrow(RangeError)
  })
})
