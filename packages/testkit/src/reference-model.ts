import type { ErrorCode } from '@worklease/spec'

interface ModelLease {
  token: bigint
  holderId: string
  expiresAt: number
  released: boolean
  cleanHandoff: boolean
  state: Uint8Array | null
  /** The largest checkpoint sequence stored for this token; 0 after acquire. */
  sequence: number
}

/** A checkpoint as the model reads it: the state (null: none) and how the previous lease ended. */
export interface ModelCheckpoint {
  state: Uint8Array | null
  cleanHandoff: boolean
}

/** What the model predicts for one operation. */
export type ModelOutcome<T = undefined> = { ok: true; value: T } | { ok: false; code: ErrorCode }

/** The parts of a record the model checks; `expiresAt` only on client clocks. */
export interface ModelRecord {
  workId: string
  holderId: string
  fencingToken: bigint
}

/** The largest token any store keeps (the spec's `MAX_FENCING_TOKEN`, restated independently). */
const TOKEN_CEILING = 2n ** 63n - 1n

/**
 * The contract as a sequential state machine, written independently of any backend (including
 * `MemoryBackend`) so that the model-based group compares two implementations, not one with itself.
 * Time is whatever the caller says "now" is. It predicts calls that settle with an outcome: a call
 * whose signal fired while it was out rejects with the signal's reason, which is no outcome (the
 * write may land, even after later calls), so the model group sends no signals; the `badInput` group
 * checks that rejection (with the reason, before the event loop turns), and the torture checker
 * histories in which such writes land late.
 */
export class ReferenceModel {
  readonly #leases = new Map<string, ModelLease>()

  acquire(
    workId: string,
    holderId: string,
    ttlMs: number,
    now: number,
  ): ModelOutcome<{ token: bigint; expiresAt: number; checkpoint: ModelCheckpoint }> {
    const lease = this.#leases.get(workId)
    if (lease && !lease.released && lease.expiresAt > now) return { ok: false, code: 'LEASE_HELD' }
    if (lease && lease.token >= TOKEN_CEILING) return { ok: false, code: 'TOKENS_EXHAUSTED' }
    const token = (lease?.token ?? 0n) + 1n
    const taken: ModelLease = {
      token,
      holderId,
      expiresAt: now + ttlMs,
      released: false,
      cleanHandoff: lease === undefined || lease.released,
      state: lease?.state ?? null,
      sequence: 0,
    }
    this.#leases.set(workId, taken)
    // acquireWithCheckpoint's read: what readCheckpoint of the new record says at once.
    // The caller's own copy, as every read's: what it does to it never reaches the stored state.
    const checkpoint = { state: copyOf(taken.state), cleanHandoff: taken.cleanHandoff }
    return { ok: true, value: { token, expiresAt: now + ttlMs, checkpoint } }
  }

  renew(record: ModelRecord, ttlMs: number, now: number): ModelOutcome {
    const lease = this.#valid(record)
    if (!lease) return { ok: false, code: 'FENCED' }
    if (lease.expiresAt <= now) return { ok: false, code: 'LEASE_EXPIRED' }
    lease.expiresAt = Math.max(lease.expiresAt, now + ttlMs)
    return { ok: true, value: undefined }
  }

  /**
   * Each record judged alone, in order, at one "now"; the caller checks the batch's input rules (one
   * holder, distinct workIds) before asking.
   */
  renewMany(
    records: readonly ModelRecord[],
    ttlMs: number,
    now: number,
  ): ('renewed' | 'expired' | 'fenced')[] {
    return records.map((record) => {
      const outcome = this.renew(record, ttlMs, now)
      if (outcome.ok) return 'renewed'
      return outcome.code === 'LEASE_EXPIRED' ? 'expired' : 'fenced'
    })
  }

  checkpoint(
    record: ModelRecord,
    state: Uint8Array,
    ttlMs: number,
    now: number,
    sequence: number,
  ): ModelOutcome {
    const lease = this.#valid(record)
    if (!lease) return { ok: false, code: 'FENCED' }
    if (sequence > lease.sequence) {
      lease.state = new Uint8Array(state)
      lease.sequence = sequence
    }
    lease.expiresAt = Math.max(lease.expiresAt, now + ttlMs)
    return { ok: true, value: undefined }
  }

  release(record: ModelRecord, now: number): ModelOutcome {
    const lease = this.#valid(record)
    if (!lease) return { ok: false, code: 'FENCED' }
    lease.released = true
    lease.expiresAt = Math.min(lease.expiresAt, now - 1)
    return { ok: true, value: undefined }
  }

  /**
   * Ends the live lease of `workId` as a crash would (the next holder's handoff is unclean), and only
   * the tenure of `fencingToken` when one is named; a free lease, or another tenure, is left alone.
   */
  revoke(workId: string, fencingToken: bigint | undefined, now: number): boolean {
    const lease = this.#leases.get(workId)
    // Revoked before: no holder, whatever a clock behind still reads as its expiry.
    if (!lease || lease.released || lease.expiresAt <= now || lease.holderId === '') return false
    if (fencingToken !== undefined && lease.token !== fencingToken) return false
    // No holderId is empty, so no record is valid for the revoked lease any more.
    lease.holderId = ''
    lease.expiresAt = now - 1
    return true
  }

  readCheckpoint(record: ModelRecord): ModelOutcome<ModelCheckpoint> {
    const lease = this.#valid(record)
    if (!lease) return { ok: false, code: 'FENCED' }
    return { ok: true, value: { state: copyOf(lease.state), cleanHandoff: lease.cleanHandoff } }
  }

  #valid(record: ModelRecord): ModelLease | undefined {
    const lease = this.#leases.get(record.workId)
    if (
      !lease ||
      lease.released ||
      lease.token !== record.fencingToken ||
      lease.holderId !== record.holderId
    ) {
      return undefined
    }
    return lease
  }
}

/** A plain Uint8Array of the reader's own (or null). */
function copyOf(state: Uint8Array | null): Uint8Array | null {
  return state === null ? null : new Uint8Array(state)
}
