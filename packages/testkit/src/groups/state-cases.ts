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
    name: 'a state is read as a plain Uint8Array of its own, never a Buffer, a view into a larger buffer or the stored bytes, at every size',
    async run(c) {
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
      // Drivers copy small and large states on different paths (a pooled slab, a Buffer, the bytes as
      // stored): each size's copy is checked, and that writing into it changes nothing stored.
      const large = Math.min(c.capabilities.maxStateBytes, 100 * 1024)
      const patterned = (size: number) => Uint8Array.from({ length: size }, (_, i) => (i * 31 + 7) & 0xff)
      const states: Array<[string, Uint8Array]> = [
        ['from a Buffer', Buffer.from('from a Buffer')],
        ['a view written', new Uint8Array(64).fill(5).subarray(8, 16)],
        [`${large} bytes`, patterned(large)],
      ]
      for (const [label, state] of states) {
        const expected = Uint8Array.from(state)
        const workId = c.workId()
        const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
        await c.backend.checkpoint(record, state, LONG_TTL_MS)
        const read = (await c.backend.readCheckpoint(record)).state
        owned(read, `readCheckpoint of ${label}`)
        read!.fill(0)
        checkBytes(
          (await c.backend.readCheckpoint(record)).state,
          expected,
          `${label}, read after writing into a read`,
        )
        if (!c.capabilities.acquireWithCheckpoint) continue
        await c.backend.release(record)
        const taken = await c.backend.acquireWithCheckpoint!(workId, 'holder-b', LONG_TTL_MS)
        owned(taken.checkpoint.state, `acquireWithCheckpoint of ${label}`)
        taken.checkpoint.state!.fill(0)
        checkBytes(
          (await c.backend.readCheckpoint(taken.record)).state,
          expected,
          `${label}, read after writing into what acquireWithCheckpoint returned`,
        )
      }
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
