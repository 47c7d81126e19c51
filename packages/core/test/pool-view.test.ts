import { MemoryBackend } from '@worklease/memory'
import type { ListOptions } from '@worklease/spec'
import { describe, expect, test } from 'vitest'
import { poolKeys, readGroup } from '../src/pool-view.js'

describe('readGroup', () => {
  test('reads a group of several pages whole, each page through the list function it was given', async () => {
    const backend = new MemoryBackend()
    const keys = poolKeys('g')
    const units = 2_500
    for (let i = 0; i < units; i++) await backend.acquire(keys.unit(`u${i}`), `h${i % 3}`, 60_000)
    for (const holder of ['h2', 'h0', 'h1']) await backend.acquire(keys.member(holder), holder, 60_000)
    const mark = await backend.acquire(keys.doneMark('u7'), 'h0', 60_000)
    await backend.release(mark)
    // Outside the group: never read into it.
    await backend.acquire('g2/u/other', 'h9', 60_000)

    const asked: ListOptions[] = []
    const group = await readGroup((options) => {
      asked.push({ ...options })
      return backend.list(options)
    }, keys)

    expect(group.holders.size).toBe(units)
    expect(group.holders.get('u2499')).toBe('h0')
    expect(group.members).toEqual(['h0', 'h1', 'h2'])
    expect([...group.done]).toEqual(['u7'])
    expect(asked.length).toBe(3)
    expect(asked.every((options) => options.prefix === 'g/' && options.limit === 1_000)).toBe(true)
    expect(asked[0]!.cursor).toBeUndefined()
    expect(asked.slice(1).every((options) => typeof options.cursor === 'string')).toBe(true)
  })
})
