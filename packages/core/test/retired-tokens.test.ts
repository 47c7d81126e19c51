import { describe, expect, test } from 'vitest'
import { RetiredTokens } from '../src/retired-tokens.js'

describe('RetiredTokens', () => {
  test('keeps the largest token of each of the last `capacity` workIds let go of, and forgets older ones', () => {
    const retired = new RetiredTokens(3)
    retired.retire('a', 5n)
    retired.retire('a', 4n)
    expect(retired.get('a')).toBe(5n)
    retired.retire('b', 1n)
    retired.retire('c', 1n)
    // 'a' again: it is among the last three let go of however often the others come and go.
    retired.retire('d', 1n)
    retired.retire('a', 6n)
    retired.retire('e', 1n)
    retired.retire('f', 1n)
    expect(retired.get('a')).toBe(6n)
    expect(['d', 'e', 'f'].map((workId) => retired.get(workId))).toEqual([1n, 1n, 1n])
    // Three more without 'a', and six without 'b': gone.
    for (const workId of ['g', 'h', 'i', 'j', 'k', 'l']) retired.retire(workId, 1n)
    expect(retired.get('a')).toBeUndefined()
    expect(retired.get('b')).toBeUndefined()
    expect(retired.get('l')).toBe(1n)
  })

  test('a workId let go of again with a smaller token keeps its larger one and counts as let go of last', () => {
    const retired = new RetiredTokens(3)
    retired.retire('x', 5n)
    for (const workId of ['a', 'b', 'c', 'd']) retired.retire(workId, 1n)
    retired.retire('x', 3n)
    retired.retire('e', 1n)
    retired.retire('f', 1n)
    expect(retired.get('x')).toBe(5n)
  })

  test('the last `capacity` distinct workIds are always remembered, whatever came before', () => {
    const retired = new RetiredTokens(100)
    for (let i = 0; i < 1_000; i++) {
      retired.retire(`job-${i}`, BigInt(i + 1))
      for (let back = 0; back < Math.min(100, i + 1); back++) {
        if (retired.get(`job-${i - back}`) !== BigInt(i - back + 1))
          throw new Error(`forgot job-${i - back} at ${i}`)
      }
    }
  })
})
