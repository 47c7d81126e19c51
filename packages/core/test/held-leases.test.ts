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
