import { setMaxListeners } from 'node:events'
import { performance } from 'node:perf_hooks'
import { type Lease, Leaser } from '@worklease/core'
import { type Backend, isLeaseHeldError, type LeaseRecord } from '@worklease/spec'
import type { LockSide } from './lock-side.js'

let leasers = 0

/**
 * worklease as a {@link LockSide}: `@worklease/core`'s `Leaser` over `backend`, with its defaults
 * (retry policy, renew interval ttl/3), as a user calls it. A Leaser holds leases under one holderId
 * and its ttl is fixed, so one Leaser is kept per ttl for cycles, and every waiter and crashed holder
 * gets its own (a separate process, as far as the store can tell).
 *
 * ```ts
 * const side = workleaseSide(session.backend, () => session.roundTrips(), 'statements')
 * ```
 */
export function workleaseSide(
  backend: Backend,
  roundTrips: () => number,
  roundTripUnit: string,
  label = 'worklease',
): LockSide<Lease> {
  const byTtl = new Map<number, Leaser>()
  const all = new Set<Leaser>()
  const newLeaser = (ttlMs: number) => {
    const leaser = new Leaser({ backend, ttlMs, holderId: `bench-${process.pid}-${++leasers}` })
    all.add(leaser)
    return leaser
  }
  const shared = (ttlMs: number) => {
    let leaser = byTtl.get(ttlMs)
    if (!leaser) {
      leaser = newLeaser(ttlMs)
      byTtl.set(ttlMs, leaser)
    }
    return leaser
  }
  return {
    label,
    semantics:
      'fencing token per lease; expiry on the store clock; renewed by the runner (ttl/3); checkpoints',
    waiting:
      'Leaser `wait: true`: polls with the retry policy (full jitter, 50 ms doubling to 2 s), or sleeps until the holder expiry where LEASE_HELD carries it',
    roundTripUnit,
    async tryAcquire(key, ttlMs) {
      try {
        return await shared(ttlMs).acquire(key)
      } catch (error) {
        if (isLeaseHeldError(error)) return null
        throw error
      }
    },
    release: (lease) => lease.release(),
    async waitAcquire(key, ttlMs) {
      const leaser = newLeaser(ttlMs)
      const lease = await leaser.acquire(key, { wait: true })
      // The lease outlives this Leaser object only until released: close() is left to close().
      return lease
    },
    async crash(key, ttlMs) {
      const start = performance.now()
      // Straight through the backend: nobody will renew or release this lease.
      await backend.acquire(key, `crashed-${process.pid}-${++leasers}`, ttlMs)
      return { freeAt: start + ttlMs }
    },
    roundTrips,
    async close() {
      await Promise.all([...all].map((leaser) => leaser.close({ timeoutMs: 2_000 })))
    },
  }
}

/**
 * worklease's driver alone as a {@link LockSide}: the store calls a `Leaser` makes for an acquire and
 * release, no runner. With its default `prefetchCheckpoint` a Leaser acquires through
 * `acquireWithCheckpoint` where the driver has it (the previous holder's state and cleanHandoff in the
 * same round trip), so this side does too: otherwise the Leaser ÷ driver ratio would count that read,
 * store work, as the runner's. Likewise the AbortSignal a Leaser hands each release (the acquire gets
 * none): a driver that races its call with the spec's `raceAbort` subscribes to it, the driver's work.
 * A Leaser shares one signal among the calls that start within a sixteenth of its call timeout, so
 * this side hands every release one signal, never aborted. Measured in the cycles only, beside the
 * Leaser row, so the report shows which part of a gap is the store's work and which the runner's.
 */
export function workleaseDriverSide(
  backend: Backend,
  roundTrips: () => number,
  roundTripUnit: string,
  label = 'worklease driver',
): LockSide<LeaseRecord> {
  const holderId = `bench-driver-${process.pid}-${++leasers}`
  // Made as the Leaser makes its shared signals: a client that subscribes once per request in flight
  // (MongoDB's driver does) puts 16 listeners on it at concurrency 16, past Node's leak warning at 11.
  const signal = new AbortController().signal
  setMaxListeners(0, signal)
  const releaseOptions = { signal }
  const runner = workleaseSide(backend, roundTrips, roundTripUnit, label)
  // The Leaser's own test (check-option.ts): declared, and a method.
  const withCheckpoint =
    backend.capabilities.acquireWithCheckpoint === true && typeof backend.acquireWithCheckpoint === 'function'
  const acquire = withCheckpoint
    ? (key: string, ttlMs: number) => backend.acquireWithCheckpoint!(key, holderId, ttlMs).then(recordOf)
    : (key: string, ttlMs: number) => backend.acquire(key, holderId, ttlMs)
  return {
    ...runner,
    label,
    cyclesOnly: true,
    semantics: `the Backend calls a Leaser makes, alone (${withCheckpoint ? 'acquireWithCheckpoint' : 'acquire'}, release with a signal): what the Leaser adds is the difference`,
    waiting: "none (cycles only: the driver makes single attempts; waiting is the Leaser's)",
    async tryAcquire(key, ttlMs) {
      try {
        return await acquire(key, ttlMs)
      } catch (error) {
        if (isLeaseHeldError(error)) return null
        throw error
      }
    },
    release: (record) => backend.release(record, releaseOptions),
    waitAcquire: () => Promise.reject(new Error('the driver alone does not wait')),
  }
}

const recordOf = ({ record }: { record: LeaseRecord }): LeaseRecord => record
