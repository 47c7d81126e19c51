import {
  type BackendCapabilities,
  createLeaseRecord,
  isLeaseHeldError,
  isWorkleaseError,
  MAX_TTL_MS,
} from '@worklease/spec'
import { check, checkEqual, checkRejects, rejection, show } from '../assertions.js'
import { LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes, checkRecord, takeWays } from './shared.js'

const needsHolder = (caps: BackendCapabilities) =>
  caps.reportsHolder ? undefined : 'the backend does not report the holder (capabilities.reportsHolder)'

/** The case that catches a driver judging the holder by a "now" later than its refused write's. */
export const LATE_HOLDER_READ_CASE =
  'LEASE_HELD still names the holder when the lease expires between the refusal and its reply'

// Server clocks: the reported expiry and the record's are read in different statements.
const SERVER_TOLERANCE_MS = 1_000

export const acquireCases: CaseDefinition[] = [
  {
    name: 'a new workId gets token 1 and expires at now + ttl',
    async run(c) {
      const workId = c.workId()
      const startedAt = Date.now()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      checkRecord(c, record, {
        workId,
        holderId: 'holder-a',
        fencingToken: 1n,
        ttlMs: LONG_TTL_MS,
        startedAt,
      })
    },
  },
  {
    name: 'a held lease refuses another holder with LEASE_HELD',
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'second acquire',
      )
    },
  },
  {
    name: 'leases are not reentrant: the same holderId gets LEASE_HELD too',
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-a', LONG_TTL_MS),
        'LEASE_HELD',
        'reentrant acquire',
      )
    },
  },
  {
    name: 'LEASE_HELD is an Error with a stable code that the guards recognise',
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      let caught: unknown
      try {
        await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      } catch (error) {
        caught = error
      }
      check(caught instanceof Error, 'LEASE_HELD must be an Error')
      checkEqual((caught as { code?: unknown }).code, 'LEASE_HELD', 'error.code')
      check(isWorkleaseError(caught, 'LEASE_HELD'), 'isWorkleaseError(error, LEASE_HELD)')
    },
  },
  {
    name: 'a failed acquire changes nothing: the holder keeps its lease and token',
    async run(c) {
      const workId = c.workId()
      const held = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'second acquire',
      )
      await c.backend.renew(held, LONG_TTL_MS)
      await c.backend.release(held)
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'token after one failed and one successful takeover')
    },
  },
  {
    name: 'an expired lease can be taken by anyone, with the next token',
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      const startedAt = Date.now()
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkRecord(c, next, { workId, holderId: 'holder-b', fencingToken: 2n, ttlMs: LONG_TTL_MS, startedAt })
    },
  },
  {
    name: 'the same holder can take its own expired lease again, as a new lease',
    async run(c) {
      const workId = c.workId()
      const first = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      const second = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      checkEqual(second.fencingToken, 2n, 'token of the second lease')
      await checkRejects(() => c.backend.renew(first, LONG_TTL_MS), 'FENCED', 'renew with the first record')
    },
  },
  {
    name: 'a released lease can be taken at once, with the next token',
    async run(c) {
      const workId = c.workId()
      const first = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.release(first)
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'token after release')
    },
  },
  {
    name: 'the smallest and largest ttl are accepted, by every operation that takes one',
    async run(c) {
      const tiny = await c.backend.acquire(c.workId(), 'holder-a', 1)
      checkEqual(tiny.fencingToken, 1n, 'token with ttl 1')
      const huge = await c.backend.acquire(c.workId(), 'holder-a', MAX_TTL_MS)
      checkEqual(huge.fencingToken, 1n, 'token with the largest ttl')
      check(huge.expiresAt.getTime() > Date.now() + 24 * 86_400_000, 'largest ttl expires in about 24.8 days')
      const held = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      for (const ttl of [1, MAX_TTL_MS]) {
        await c.backend.renew(held, ttl)
        await c.backend.checkpoint(held, bytes(`ttl ${ttl}`), ttl)
        if (c.capabilities.renewMany) {
          checkEqual((await c.backend.renewMany!([held], ttl)).join(), 'renewed', `renewMany with ttl ${ttl}`)
        }
      }
    },
  },
  {
    name: 'LEASE_HELD reports who holds the lease and how long it has left',
    unsupported: needsHolder,
    async run(c) {
      const workId = c.workId()
      const ttl = 5_000
      const record = await c.backend.acquire(workId, 'holder-a', ttl)
      await c.elapse(1_000)
      const error = await rejection(
        () => c.backend.acquire(workId, 'holder-b', ttl),
        'acquire of a held lease',
      )
      check(isLeaseHeldError(error), `expected LEASE_HELD, got ${show(error)}`)
      const { holder } = error
      check(
        holder !== undefined,
        'LeaseHeldError.holder is missing though capabilities.reportsHolder is true',
      )
      checkEqual(holder.holderId, 'holder-a', 'holder.holderId')
      checkEqual(holder.fencingToken, record.fencingToken, 'holder.fencingToken')
      check(holder.expiresAt instanceof Date, 'holder.expiresAt must be a Date')
      if (c.clientClock) {
        checkEqual(holder.expiresAt.getTime(), record.expiresAt.getTime(), 'holder.expiresAt')
        checkEqual(holder.expiresInMs, ttl - 1_000, 'holder.expiresInMs')
      } else {
        const drift = Math.abs(holder.expiresAt.getTime() - record.expiresAt.getTime())
        check(drift <= SERVER_TOLERANCE_MS, `holder.expiresAt is ${drift} ms off the record's`)
        check(
          holder.expiresInMs > 0 && holder.expiresInMs <= ttl - 1_000 + SERVER_TOLERANCE_MS / 10,
          `holder.expiresInMs ${holder.expiresInMs} is not what is left of a ${ttl} ms lease after 1 s`,
        )
      }
    },
  },
  {
    name: 'LEASE_HELD reports the expiry a renew and a checkpoint moved, not the one the lease was taken with',
    unsupported: needsHolder,
    async run(c) {
      // A waiter sleeps until the expiry LEASE_HELD reports: one kept from the acquire wakes it early,
      // again and again, for as long as the holder renews.
      for (const [name, take] of takeWays(c)) {
        const workId = c.workId()
        const record = await c.backend.acquire(workId, 'holder-a', 2_000)
        await c.backend.renew(record, 20_000)
        await c.backend.checkpoint(record, bytes('moved on'), LONG_TTL_MS)
        const error = await rejection(
          () => take(c.backend, workId, 'holder-b', LONG_TTL_MS),
          `${name} of the held lease`,
        )
        check(isLeaseHeldError(error), `${name}: expected LEASE_HELD, got ${show(error)}`)
        const left = error.holder?.expiresInMs
        if (c.clientClock) checkEqual(left, LONG_TTL_MS, `${name}: holder.expiresInMs`)
        else {
          check(
            // Both ends slack: the store rounds its expiry and its "now" apart, a replica's clock may lead.
            left !== undefined &&
              left > LONG_TTL_MS - SERVER_TOLERANCE_MS * 10 &&
              left <= LONG_TTL_MS + SERVER_TOLERANCE_MS,
            `${name}: holder.expiresInMs ${left} is not what the checkpoint's ${LONG_TTL_MS} ms left`,
          )
        }
      }
    },
  },
  {
    name: LATE_HOLDER_READ_CASE,
    unsupported: (caps) =>
      needsHolder(caps) ??
      (caps.clock === 'client'
        ? undefined
        : 'a server clock: the case moves the client clock between the refused write and the reply'),
    async run(c) {
      // A waiter that wakes at the expiry can be refused a moment before it, while a driver that
      // reads the holder afterwards finds the lease already expired. It must still report the lease
      // that refused it (expiring in 0 ms), or the waiter, told nothing, backs off blindly.
      // acquireWithCheckpoint has acquire's failure-path reads: the same, through it.
      for (const [name, take] of takeWays(c)) {
        const workId = c.workId()
        const ttl = 5_000
        const record = await c.backend.acquire(workId, 'holder-a', ttl)
        const refusedAt = c.clock.now() + ttl - 1
        let reads = 0
        let sentBefore = Number.POSITIVE_INFINITY
        // After the acquire's first reading and once its write has gone out, the lease has expired.
        const writeSent = () => (c.harness.roundTrips ? c.harness.roundTrips() > sentBefore : true)
        const late = await c.harness.open({
          clock: { now: () => (reads++ > 0 && writeSent() ? refusedAt + 2 : refusedAt) },
        })
        sentBefore = c.harness.roundTrips?.() ?? 0
        const error = await rejection(
          () => take(late, workId, 'holder-b', ttl),
          `${name} refused 1 ms before the expiry`,
        )
        check(isLeaseHeldError(error), `${name}: expected LEASE_HELD, got ${show(error)}`)
        check(
          error.holder !== undefined,
          `${name}: LeaseHeldError.holder is missing: the lease expired after it refused, and is still the one that did`,
        )
        checkEqual(error.holder.holderId, 'holder-a', `${name}: holder.holderId`)
        checkEqual(error.holder.fencingToken, record.fencingToken, `${name}: holder.fencingToken`)
        check(
          error.holder.expiresInMs >= 0 && error.holder.expiresInMs <= 1,
          `${name}: holder.expiresInMs ${error.holder.expiresInMs}: the lease had at most 1 ms left when it refused`,
        )
      }
    },
  },
  {
    name: 'LEASE_HELD names the caller itself when its own earlier acquire took the lease',
    unsupported: needsHolder,
    async run(c) {
      // What a caller does after an acquire whose reply was lost: ask again, recognise itself, and
      // rebuild the record, which must then be as valid as the one whose reply was lost.
      const workId = c.workId()
      const lost = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      const error = await rejection(
        () => c.backend.acquire(workId, 'holder-a', LONG_TTL_MS),
        'acquire of its own lease',
      )
      check(
        isLeaseHeldError(error) && error.holder !== undefined,
        `expected LEASE_HELD with holder, got ${show(error)}`,
      )
      checkEqual(error.holder.holderId, 'holder-a', 'holder.holderId')
      const rebuilt = createLeaseRecord(
        workId,
        'holder-a',
        error.holder.fencingToken,
        error.holder.expiresAt.getTime(),
      )
      checkEqual(rebuilt.fencingToken, lost.fencingToken, 'rebuilt token')
      await c.backend.checkpoint(rebuilt, bytes('recovered'), LONG_TTL_MS)
      await c.backend.release(rebuilt)
      checkEqual((await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)).fencingToken, 2n, 'next token')
    },
  },
]
