import { MemoryBackend, MemoryStore } from '@worklease/memory'
import { isInvalidArgumentError } from '@worklease/spec'
import { describe, expect, test } from 'vitest'
import { type CheckpointCodec, jsonCodec, Leaser } from '../src/index.js'
import { setup } from './setup.js'

const INVALID = expect.objectContaining({ code: 'INVALID_ARGUMENT' })

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

  test('jsonCodec refuses a value JSON cannot encode with INVALID_ARGUMENT, before any store call', async () => {
    const codec = jsonCodec<unknown>()
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    // JSON.stringify gives undefined for the first three (no bytes, which no read could decode) and
    // throws a TypeError for the others.
    for (const state of [undefined, () => 1, Symbol('state'), 1n, cyclic]) {
      expect(() => codec.encode(state)).toThrow(INVALID)
    }
    const { leaser, backend, other } = setup({ codec: codec as never })
    await leaser.run('job', async (lease) => {
      await expect(lease.checkpoint(undefined as never)).rejects.toSatisfy(isInvalidArgumentError)
      expect(lease.held).toBe(true)
    })
    expect(backend.calls.checkpoint).toBe(0)
    const successor = await other.acquire('job', 'worker-b', 5_000)
    expect((await other.readCheckpoint(successor)).state).toBeNull()
  })

  test('checkpoint rejects, never throws, when the state fails before the store call; the lease is kept', async () => {
    const encodeFailure = new Error('encode failed')
    const throwing: CheckpointCodec<unknown> = {
      encode: () => {
        throw encodeFailure
      },
      decode: (bytes) => bytes,
    }
    const cases = [
      ['a codec that throws', throwing, 'state', (error: unknown) => error === encodeFailure],
      ['jsonCodec given a BigInt', jsonCodec<unknown>(), { n: 1n }, isInvalidArgumentError],
      ['the default codec given a string', undefined, 'text', isInvalidArgumentError],
    ] as const
    for (const [name, codec, state, expected] of cases) {
      const { leaser, backend } = setup(codec ? { codec: codec as never } : {})
      const lease = await leaser.acquire('job')
      let checkpointing: Promise<void> | undefined
      expect(() => {
        checkpointing = lease.checkpoint(state as never)
      }, name).not.toThrow()
      await expect(checkpointing, name).rejects.toSatisfy(expected)
      expect(lease.held, name).toBe(true)
      expect(backend.calls.checkpoint, name).toBe(0)
    }
  })

  test("the codec's functions are read once, at construction, and called on the codec", async () => {
    let encodeReads = 0
    const codec = {
      prefix: 7,
      get encode() {
        encodeReads++
        if (encodeReads > 1) return undefined
        return function (this: { prefix: number }, state: Uint8Array) {
          return Uint8Array.of(this.prefix, ...state)
        }
      },
      decode(this: { prefix: number }, bytes: Uint8Array) {
        if (bytes[0] !== this.prefix) throw new Error('not ours')
        return bytes.subarray(1)
      },
    }
    const leaser = new Leaser<Uint8Array>({
      backend: new MemoryBackend(),
      ttlMs: 5_000,
      codec: codec as never,
    })
    expect(encodeReads).toBe(1)
    await leaser.run('job', (lease) => lease.checkpoint(Uint8Array.of(1, 2)))
    const { state, bytes } = await leaser.run('job', (lease) => lease.readCheckpoint())
    expect(state).toEqual(Uint8Array.of(1, 2))
    expect(bytes).toEqual(Uint8Array.of(7, 1, 2))
    expect(encodeReads).toBe(1)
    await leaser.close()
  })

  test('a codec without encode and decode is INVALID_ARGUMENT', () => {
    const backend = new MemoryBackend()
    expect(() => new Leaser({ backend, ttlMs: 1_000, codec: {} as never })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
  })
})
