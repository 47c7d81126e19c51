import { describe, expect, test } from 'vitest'
import { checkClock, MAX_CLOCK_MS, readClock } from '../src/index.js'

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

describe('checkClock', () => {
  test('keeps the now function it checked, called on the clock: a getter is read once', () => {
    let reads = 0
    const clock = {
      offset: 5,
      get now() {
        reads++
        return reads === 1
          ? function (this: { offset: number }) {
              return 1_000 + this.offset
            }
          : undefined
      },
    }
    const checked = checkClock(clock)
    expect([readClock(checked), readClock(checked), reads]).toEqual([1_005, 1_005, 1])
  })

  // Found by a review (session 37): the first checkClock refused Date, which drivers took before.
  test('takes Date itself, whose now() is a Clock', () => {
    const before = Date.now()
    expect(readClock(checkClock(Date))).toBeGreaterThanOrEqual(before)
  })

  test('refuses anything but an object with a now function, as INVALID_ARGUMENT', () => {
    const throwing = Object.defineProperty({}, 'now', {
      get() {
        throw new Error('boom')
      },
    })
    for (const clock of [undefined, null, 5, 'now', {}, { now: 5 }, throwing]) {
      expect(() => checkClock(clock), String(clock)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      )
    }
  })
})
