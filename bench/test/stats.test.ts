import { describe, expect, test } from 'vitest'
import { median, quantile, weightedQuantile } from '../src/stats.js'

describe('stats', () => {
  test('median of odd and even counts, quantile by nearest rank', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([10, 2])).toBe(6) // numeric, not lexicographic
    expect(quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.5)).toBe(5)
    expect(quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.99)).toBe(10)
    expect(Number.isNaN(median([]))).toBe(true)
  })

  test('weightedQuantile with every weight 1 is quantile', () => {
    const values = [7, 3, 9, 1, 5, 10, 2, 8, 4, 6, 0.5]
    for (const q of [0, 0.1, 0.5, 0.9, 0.99, 1]) {
      expect(
        weightedQuantile(
          values,
          values.map(() => 1),
          q,
        ),
      ).toBe(quantile(values, q))
    }
    expect(Number.isNaN(weightedQuantile([], [], 0.5))).toBe(true)
  })

  test('weightedQuantile counts a value as often as its weight', () => {
    // 1 slow value against 99 fast ones standing for 16 each: the p99 is fast.
    expect(weightedQuantile([2, 0.001], [1, 99 * 16], 0.99)).toBe(0.001)
    expect(weightedQuantile([2, 0.001], [1, 99 * 16], 1)).toBe(2)
    // Unweighted, the slow one is the p99.
    expect(quantile([2, 0.001], 0.99)).toBe(2)
    expect(() => weightedQuantile([1], [], 0.5)).toThrow(/one weight per value/)
  })
})
