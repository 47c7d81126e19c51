import { describe, expect, test } from 'vitest'
import { LocalDeadline } from '../src/local-deadline.js'
import type { Timers } from '../src/timers.js'

const timers = (wall?: number): Timers => ({
  now: () => 0,
  ...(wall === undefined ? {} : { wallNow: () => wall }),
  setTimeout: () => undefined,
  clearTimeout: () => undefined,
})

// Deadlines are kept in whole milliseconds so V8 stores them in the object, rounded down so a lease
// never outlives its exact deadline.
describe('LocalDeadline', () => {
  test('a fractional start rounds the deadline down, never up', () => {
    const deadline = new LocalDeadline(timers(), 1_000, { mono: 100.7, wall: undefined })
    expect(deadline.remaining({ mono: 1_099.5, wall: undefined })).toBe(0.5)
    expect(deadline.remaining({ mono: 1_100, wall: undefined })).toBe(0)
    expect(deadline.lastSuccessStart).toBe(100)
  })

  test('the wall clock, the size of Date.now(), counts exactly, and the sooner clock wins', () => {
    const wall = Date.now() + 0.25
    const deadline = new LocalDeadline(timers(wall), 1_000, { mono: 0, wall })
    // Wall deadline: floor(wall + 1000); 300 ms passed on the wall clock, 100 on the monotonic one.
    expect(deadline.remaining({ mono: 100, wall: wall + 300 })).toBe(Math.floor(wall + 1_000) - (wall + 300))
    expect(deadline.remaining({ mono: 900, wall: wall + 10 })).toBe(100)
  })

  test('an earlier start does not move the deadline; a later one does', () => {
    const deadline = new LocalDeadline(timers(), 1_000, { mono: 500, wall: undefined })
    expect(deadline.extend({ mono: 400, wall: undefined })).toBe(false)
    expect(deadline.remaining({ mono: 0, wall: undefined })).toBe(1_500)
    expect(deadline.extend({ mono: 600, wall: undefined })).toBe(true)
    expect(deadline.remaining({ mono: 0, wall: undefined })).toBe(1_600)
  })

  test('a clock reading that is no finite number never moves the deadline, and read now it leaves no time', () => {
    // One NaN reading (a mocked Date, a broken timers.now) kept a lease live for good: NaN compares
    // false with everything, so the deadline never passed.
    const wall = Date.now()
    const deadline = new LocalDeadline(timers(wall), 1_000, { mono: 0, wall })
    for (const start of [
      { mono: Number.NaN, wall: wall + 100 },
      { mono: Number.POSITIVE_INFINITY, wall: wall + 100 },
      { mono: 100, wall: Number.NaN },
      { mono: 100, wall: Number.POSITIVE_INFINITY },
    ]) {
      expect(deadline.extend(start)).toBe(false)
    }
    expect(deadline.remaining({ mono: 100, wall: wall + 100 })).toBe(900)
    for (const now of [
      { mono: Number.NaN, wall: wall + 100 },
      { mono: 100, wall: Number.NaN },
      { mono: Number.NEGATIVE_INFINITY, wall: wall + 100 },
    ]) {
      expect(deadline.remaining(now)).toBe(0)
    }
    const bornBad = new LocalDeadline(timers(), 1_000, { mono: Number.NaN, wall: undefined })
    expect(bornBad.remaining({ mono: 0, wall: undefined })).toBeLessThanOrEqual(0)
    // A monotonic clock of any origin: one far below zero still leaves no time.
    expect(bornBad.remaining({ mono: -1e6, wall: undefined })).toBeLessThanOrEqual(0)
  })
})
