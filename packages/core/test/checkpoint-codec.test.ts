import { MemoryBackend, MemoryStore } from '@worklease/memory'
import { describe, expect, test } from 'vitest'
import { jsonCodec, Leaser } from '../src/index.js'

// Issue 20: checkpoint state was bytes only, so every user wrote the same TextEncoder + JSON pair.
describe('checkpoint codecs', () => {
  test('jsonCodec: checkpoint takes a value, readCheckpoint returns it typed, bytes still there', async () => {
    const store = new MemoryStore()
    const leaser = new Leaser({
      backend: new MemoryBackend({ store }),
      ttlMs: 5_000,
      codec: jsonCodec<{ page: number }>(),
    })
    await leaser.run('import', async (lease) => {
      expect(await lease.readCheckpoint()).toEqual({ state: null, bytes: null, cleanHandoff: true })
      await lease.checkpoint({ page: 3 })
    })
    await leaser.run('import', async (lease) => {
      const { state, bytes } = await lease.readCheckpoint()
      expect(state).toEqual({ page: 3 })
      expect(new TextDecoder().decode(bytes!)).toBe('{"page":3}')
    })
    await leaser.close()
  })

  test('the default codec is bytes in, bytes out, copied at the call', async () => {
    const leaser = new Leaser({ backend: new MemoryBackend(), ttlMs: 5_000 })
    await leaser.run('raw', async (lease) => {
      const buffer = Buffer.from('abc')
      const stored = lease.checkpoint(buffer)
      buffer[0] = 0x7a
      await stored
      const { state, bytes } = await lease.readCheckpoint()
      expect(new TextDecoder().decode(state!)).toBe('abc')
      expect(bytes).toEqual(state)
    })
    await leaser.close()
  })

  test('a state the codec cannot decode rejects with a TypeError naming the workId; the lease is kept', async () => {
    const store = new MemoryStore()
    const raw = new Leaser({ backend: new MemoryBackend({ store }), ttlMs: 5_000 })
    await raw.run('mixed', (lease) => lease.checkpoint(new Uint8Array([0xff, 0xfe])))
    const typed = new Leaser({
      backend: new MemoryBackend({ store }),
      ttlMs: 5_000,
      codec: jsonCodec<number>(),
    })
    await typed.run('mixed', async (lease) => {
      await expect(lease.readCheckpoint()).rejects.toThrow(/checkpoint of "mixed" could not be decoded/)
      expect(lease.held).toBe(true)
    })
    await Promise.all([raw.close(), typed.close()])
  })

  test('a codec without encode and decode is INVALID_ARGUMENT', () => {
    const backend = new MemoryBackend()
    expect(() => new Leaser({ backend, ttlMs: 1_000, codec: {} as never })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
  })
})
