import { check, checkBytes } from '../assertions.js'
import { LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'

function pattern(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length)
  let x = seed >>> 0 || 1
  for (let i = 0; i < length; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    out[i] = x & 0xff
  }
  return out
}

export const stateCases: CaseDefinition[] = [
  {
    name: 'all 256 byte values round-trip in order',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      const all = Uint8Array.from({ length: 512 }, (_, i) => (i < 256 ? i : 511 - i))
      await c.backend.checkpoint(record, all, LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(record)).state, all, 'state')
    },
  },
  {
    name: 'an empty state is stored as empty, not as null, and handed on so: after a release and an expiry',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(record, new Uint8Array(0), LONG_TTL_MS)
      const { state } = await c.backend.readCheckpoint(record)
      check(state !== null, 'an empty checkpoint must read back as an empty Uint8Array, not null')
      checkBytes(state, new Uint8Array(0), 'state')
      // A store that keeps empty as NULL, or a takeover that copies `x?.length ? x : null`, tells the
      // successor nobody ever checkpointed, and it starts the work over.
      await c.backend.release(record)
      const afterRelease = await c.backend.acquire(record.workId, 'holder-b', SHORT_TTL_MS)
      checkBytes(
        (await c.backend.readCheckpoint(afterRelease)).state,
        new Uint8Array(0),
        'state after a release',
      )
      await c.expire()
      const afterExpiry = await c.backend.acquire(record.workId, 'holder-c', LONG_TTL_MS)
      checkBytes(
        (await c.backend.readCheckpoint(afterExpiry)).state,
        new Uint8Array(0),
        'state after an expiry',
      )
    },
  },
  {
    // A pooled Node.js Buffer (Buffer.from of a small reply) is a view into a shared slab: its
    // `.buffer` shows other bytes (another lease's state read just before), and `slice` aliases.
    name: 'a state is read as a plain Uint8Array of its own, never a Buffer or a view into a larger buffer',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      const owned = (state: Uint8Array | null, what: string) => {
        check(state !== null, `${what}: a state was checkpointed`)
        check(
          Object.getPrototypeOf(state) === Uint8Array.prototype,
          `${what}: must be a plain Uint8Array, got ${state!.constructor?.name}`,
        )
        check(
          state!.byteOffset === 0 && state!.buffer.byteLength === state!.byteLength,
          `${what}: must not be a view into a larger buffer (${state!.byteLength} of ${state!.buffer.byteLength} bytes)`,
        )
      }
      await c.backend.checkpoint(record, Buffer.from('from a Buffer'), LONG_TTL_MS)
      owned((await c.backend.readCheckpoint(record)).state, 'readCheckpoint')
      await c.backend.checkpoint(record, new Uint8Array(64).subarray(8, 16), LONG_TTL_MS)
      owned((await c.backend.readCheckpoint(record)).state, 'readCheckpoint of a view written')
      if (!c.capabilities.acquireWithCheckpoint) return
      await c.backend.release(record)
      const { checkpoint } = await c.backend.acquireWithCheckpoint!(workId, 'holder-b', LONG_TTL_MS)
      owned(checkpoint.state, 'acquireWithCheckpoint')
    },
  },
  {
    name: 'a state of exactly maxStateBytes is accepted and round-trips',
    timeoutMs: 30_000,
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      const largest = pattern(c.capabilities.maxStateBytes, 7)
      await c.backend.checkpoint(record, largest, LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(record)).state, largest, 'state')
    },
  },
  {
    name: 'a view into a larger buffer stores only the bytes it shows',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      const backing = pattern(64, 3)
      const view = backing.subarray(10, 20)
      await c.backend.checkpoint(record, view, LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(record)).state, backing.slice(10, 20), 'state')
    },
  },
  {
    name: 'a Node.js Buffer is accepted and read back as a Uint8Array',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(record, Buffer.from('buffer state'), LONG_TTL_MS)
      const { state } = await c.backend.readCheckpoint(record)
      check(state instanceof Uint8Array, 'state must be a Uint8Array')
      checkBytes(state, new TextEncoder().encode('buffer state'), 'state')
    },
  },
]
