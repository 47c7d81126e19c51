import { assert, describe, expect, test } from 'vitest'
import { MemoryBackend, MemoryStore } from '../src/index.js'

// The conformance suite runs against MemoryBackend in @worklease/testkit's own tests; these cover
// what is specific to the in-process store.
describe('MemoryBackend', () => {
  test('backends sharing a store see each other, each on its own clock', async () => {
    const store = new MemoryStore()
    let now = 1_000
    const a = new MemoryBackend({ store, clock: { now: () => now } })
    const b = new MemoryBackend({ store, clock: { now: () => now - 500 } })
    const record = await a.acquire('w', 'a', 1_000)
    expect(record.expiresAt.getTime()).toBe(2_000)
    await expect(b.acquire('w', 'b', 1_000)).rejects.toMatchObject({ code: 'LEASE_HELD' })
    now = 2_000
    await expect(b.acquire('w', 'b', 1_000)).rejects.toMatchObject({ code: 'LEASE_HELD' })
    expect((await a.acquire('w', 'a2', 1_000)).fencingToken).toBe(2n)
  })

  test('a separate store is a separate world', async () => {
    await new MemoryBackend().acquire('w', 'a', 1_000)
    expect((await new MemoryBackend().acquire('w', 'a', 1_000)).fencingToken).toBe(1n)
  })

  test('options are read once and checked at construction', () => {
    const invalid = expect.objectContaining({ code: 'INVALID_ARGUMENT' })
    const throwing = Object.defineProperty({}, 'clock', {
      get() {
        throw new Error('boom')
      },
    })
    for (const options of [
      null,
      5,
      throwing,
      { store: {} },
      { clock: 5 },
      { clock: {} },
      { maxStateBytes: -1 },
      { maxStateBytes: Number.NaN },
      { maxStateBytes: '5' },
      // Thrown from a getter, or unprintable: still INVALID_ARGUMENT, not the getter's error.
      { store: Object.defineProperty({}, 'leases', { get: () => assert.fail('boom') }) },
      { clock: Object.defineProperty({}, 'now', { get: () => assert.fail('boom') }) },
      { maxStateBytes: Object.create(null) },
      { maxStateBytes: { toString: () => assert.fail('boom') } },
    ]) {
      expect(() => new MemoryBackend(options as never), String(Object.keys(options ?? {}))).toThrow(invalid)
    }
    let reads = 0
    const lying = {
      get maxStateBytes() {
        reads++
        return reads === 1 ? 4 : Number.NaN
      },
    }
    expect(new MemoryBackend(lying).capabilities.maxStateBytes).toBe(4)
    expect(reads).toBe(1)
  })

  test("the store's map is read once: a store whose leases getter answers another map stays one store", async () => {
    const store = new MemoryStore()
    let reads = 0
    const shifting = Object.defineProperty({ operations: 0 }, 'leases', {
      get: () => (++reads === 1 ? store.leases : new Map()),
    })
    const backend = new MemoryBackend({ store: shifting as MemoryStore })
    await backend.acquire('w', 'a', 60_000)
    await expect(backend.acquire('w', 'b', 60_000)).rejects.toMatchObject({ code: 'LEASE_HELD' })
    expect({ reads, stored: [...store.leases.keys()] }).toEqual({ reads: 1, stored: ['w'] })
  })

  test('maxStateBytes is declared and enforced', async () => {
    const backend = new MemoryBackend({ maxStateBytes: 4 })
    expect(backend.capabilities).toEqual({
      clock: 'client',
      maxStateBytes: 4,
      crossConnectionAtomic: true,
      reportsHolder: true,
      acquireWithCheckpoint: true,
      list: true,
      revoke: true,
      renewMany: { maxRecords: 1_000 },
    })
    const record = await backend.acquire('w', 'a', 1_000)
    await expect(backend.checkpoint(record, new Uint8Array(5), 1_000)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
  })

  test('a stored checkpoint keeps only its own bytes, not the slab its validated copy came from', async () => {
    const backend = new MemoryBackend()
    const record = await backend.acquire('w', 'a', 1_000)
    await backend.checkpoint(record, new Uint8Array([1, 2, 3]), 1_000)
    const stored = backend.store.leases.get('w')!.state!
    expect([...stored]).toEqual([1, 2, 3])
    expect(stored.buffer.byteLength).toBe(3)
  })

  test('only operations that pass validation count as round trips', async () => {
    const backend = new MemoryBackend()
    await expect(backend.acquire('', 'a', 1_000)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(backend.store.operations).toBe(0)
    await backend.acquire('w', 'a', 1_000)
    expect(backend.store.operations).toBe(1)
  })
})
