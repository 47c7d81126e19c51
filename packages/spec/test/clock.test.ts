import { describe, expect, test } from 'vitest'
import { MAX_CLOCK_MS, readClock } from '../src/index.js'

describe('readClock', () => {
  test('returns a reading that is a time, fractions and the range ends included', () => {
    for (const reading of [1_700_000_000_000, 1_700_000_000_000.25, 0, -1, MAX_CLOCK_MS, -MAX_CLOCK_MS]) {
      expect(readClock({ now: () => reading })).toBe(reading)
    }
  })

  test('refuses a reading that is no time as a RangeError, whose expiry would be no valid Date', () => {
    const readings = [Number.NaN, Infinity, -Infinity, MAX_CLOCK_MS + 1, -MAX_CLOCK_MS - 1, '1', 1n, null]
    for (const reading of readings) {
      expect(() => readClock({ now: () => reading as number }), String(reading)).toThrow(RangeError)
    }
    // From the largest reading, the longest lease still ends on a valid Date.
    expect(Number.isNaN(new Date(MAX_CLOCK_MS + 2_147_483_647).getTime())).toBe(false)
    expect(Number.isNaN(new Date(-MAX_CLOCK_MS - 1).getTime())).toBe(false)
  })
})
