import { describe, expect, test } from 'vitest'
import { firstInOwnOrder } from '../src/own-order.js'

/** The order a full sort with the hash in its comparator gave, as the pool had it. */
function sortedOrder(ids: readonly string[], holderId: string, order: 'take' | 'giveUp'): string[] {
  const spread = (text: string) => {
    let hash = 0x811c9dc5
    for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
    return hash >>> 0
  }
  const sign = order === 'take' ? 1 : -1
  return [...ids].sort((a, b) => sign * (spread(holderId + a) - spread(holderId + b)))
}

describe('firstInOwnOrder', () => {
  const ids = Array.from({ length: 500 }, (_, i) => `unit-${i}`)

  test.each([0, 1, 3, 10, 62, 63, 64, 499, 500, 800])(
    'the first %i, take and give-up order, as a full sort gave them',
    (count) => {
      for (const order of ['take', 'giveUp'] as const) {
        const expected = sortedOrder(ids, 'worker-a', order).slice(0, count)
        expect(firstInOwnOrder(ids, (id) => id, 'worker-a', count, order)).toEqual(expected)
      }
    },
  )

  test('members start at different units', () => {
    const first = (holderId: string) => firstInOwnOrder(ids, (id) => id, holderId, 5)
    expect(first('worker-a')).not.toEqual(first('worker-b'))
  })

  // Found by a review (session 51): the pool sorted every free unit with the hash in the comparator,
  // about 2 n log n hashes a rebalance: with a million units free, a 6 s block of the event loop.
  test('each id read (and hashed) once, however many are kept', () => {
    for (const count of [4, 100_000]) {
      let reads = 0
      firstInOwnOrder(
        Array.from({ length: 100_000 }, (_, i) => i),
        (i) => {
          reads++
          return `unit-${i}`
        },
        'worker-a',
        count,
      )
      expect(reads).toBe(100_000)
    }
  })

  test('a count of Infinity keeps every item, none of 0 or below reads any', () => {
    expect(firstInOwnOrder(ids, (id) => id, 'worker-a', Number.POSITIVE_INFINITY)).toHaveLength(500)
    let reads = 0
    firstInOwnOrder(ids, () => `${reads++}`, 'worker-a', 0)
    expect(reads).toBe(0)
  })
})
