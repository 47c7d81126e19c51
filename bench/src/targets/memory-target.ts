import { MemoryBackend, MemoryStore } from '@worklease/memory'
import { type BaselineLease, type LeaseOps, LostLeaseError } from '../lease-ops.js'
import type { Session, Target } from '../target.js'

const MAX_TOKEN = 0x7fff_ffff_ffff_ffffn

interface Row {
  token: bigint
  holderId: string
  expiresAtMs: number
  released: boolean
  cleanHandoff: boolean
  state: Uint8Array | null
  checkpointSequence: number
}

/**
 * The hand-written in-process equivalent of `MemoryBackend`: the same map updates, without input
 * validation, record objects or error classes.
 */
function memoryBaseline(counter: { operations: number }): LeaseOps<BaselineLease> {
  const rows = new Map<string, Row>()
  // Checkpoints are ordered by a sequence that only grows, as the SQL baseline's are.
  let sequence = 0
  const valid = (held: BaselineLease): Row => {
    const row = rows.get(held.workId)
    if (!row || row.released || row.token !== held.token || row.holderId !== held.holderId) {
      throw new LostLeaseError('write')
    }
    return row
  }
  return {
    async acquire(workId, holderId, ttlMs) {
      counter.operations++
      const now = Date.now()
      const previous = rows.get(workId)
      if (previous && !previous.released && previous.expiresAtMs > now) return null
      if (previous && previous.token >= MAX_TOKEN) throw new RangeError('tokens exhausted')
      const token = (previous?.token ?? 0n) + 1n
      rows.set(workId, {
        token,
        holderId,
        expiresAtMs: now + ttlMs,
        released: false,
        cleanHandoff: previous ? previous.released : true,
        state: previous?.state ?? null,
        checkpointSequence: 0,
      })
      return { workId, holderId, token }
    },
    async checkpoint(held, state, ttlMs) {
      counter.operations++
      const row = valid(held)
      const seq = ++sequence
      if (seq > row.checkpointSequence) {
        // A copy, as the backend keeps (the caller may reuse its buffer): a Buffer's slice() is a view.
        row.state = Uint8Array.prototype.slice.call(state)
        row.checkpointSequence = seq
      }
      row.expiresAtMs = Date.now() + ttlMs
    },
    async renew(held, ttlMs) {
      counter.operations++
      const row = valid(held)
      const now = Date.now()
      if (row.expiresAtMs <= now) throw new LostLeaseError('renew')
      row.expiresAtMs = now + ttlMs
    },
    async release(held) {
      counter.operations++
      const row = valid(held)
      row.released = true
      row.expiresAtMs = Math.min(row.expiresAtMs, Date.now() - 1)
    },
  }
}

/** `MemoryBackend` against a `Map` written by hand; "round trips" are store operations. */
export async function openMemoryTarget(): Promise<Target> {
  return {
    name: 'memory',
    server: `in-process (Node.js ${process.version})`,
    origin: 'this process',
    notes: [],
    async open(): Promise<Session> {
      const store = new MemoryStore()
      const counter = { operations: 0 }
      return {
        backend: new MemoryBackend({ store }),
        baseline: memoryBaseline(counter),
        roundTrips: () => store.operations + counter.operations,
        close: async () => undefined,
      }
    },
    close: async () => undefined,
  }
}
