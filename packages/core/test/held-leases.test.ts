import { describe, expect, test } from 'vitest'
import { HeldLeases } from '../src/held-leases.js'

const lease = (workId: string, fencingToken: bigint) => ({ workId, fencingToken })

// The renewal schedule fills chunks without looking for repeated workIds while this says none is shared.
describe('HeldLeases', () => {
  test('sharesWorkIds is true exactly while two leases hold one workId', () => {
    const held = new HeldLeases<ReturnType<typeof lease>>()
    const first = lease('job-a', 1n)
    const second = lease('job-a', 2n)
    const other = lease('job-b', 1n)
    held.add(first)
    held.add(other)
    expect(held.sharesWorkIds).toBe(false)
    held.add(second)
    expect(held.sharesWorkIds).toBe(true)
    held.add(lease('job-a', 3n))
    held.delete(first)
    expect(held.sharesWorkIds).toBe(true)
    held.delete(second)
    expect(held.sharesWorkIds).toBe(false)
    held.delete(second)
    expect(held.sharesWorkIds).toBe(false)
    expect([...held].map((each) => `${each.workId}:${each.fencingToken}`)).toEqual(['job-a:3', 'job-b:1'])
  })
})

describe('HeldLeases with many workIds coming and going', () => {
  test('finds, iterates and counts exactly the leases added and not deleted', () => {
    const held = new HeldLeases<ReturnType<typeof lease>>()
    const live = new Map<string, ReturnType<typeof lease>>()
    // 5,000 workIds, each held and let go, some held again: the empty lists kept meanwhile are swept.
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 5_000; i++) {
        const workId = `job-${i}`
        const previous = live.get(workId)
        if (previous) {
          held.delete(previous)
          live.delete(workId)
        }
        if ((i + round) % 3 === 0) {
          const next = lease(workId, BigInt(round + 1))
          held.add(next)
          live.set(workId, next)
        }
      }
    }
    expect(new Set(held)).toEqual(new Set(live.values()))
    expect([...held]).toHaveLength(live.size)
    expect(held.hasToken('job-2', 3n)).toBe(live.get('job-2')?.fencingToken === 3n)
    expect(held.hasToken('job-1', 1n)).toBe(live.has('job-1'))
    expect(held.sharesWorkIds).toBe(false)
  })
})
