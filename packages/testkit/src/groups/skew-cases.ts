import { isLeaseHeldError, isWorkleaseError } from '@worklease/spec'
import { check, checkBytes, checkEqual, checkRejects, rejection } from '../assertions.js'
import { LONG_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes } from './shared.js'

const SKEW_MS = 10_000
const needsClientClock = (caps: { clock: string }) =>
  caps.clock === 'server'
    ? 'the server clock decides expiry, so skew between client processes cannot change an outcome'
    : undefined

export const skewCases: CaseDefinition[] = [
  {
    name: `release is seen at once by a successor whose clock is ${SKEW_MS / 1000} s behind`,
    unsupported: needsClientClock,
    async run(c) {
      const workId = c.workId()
      const behind = await c.open(-SKEW_MS)
      const record = await c.backend.acquire(workId, 'holder-a', 5_000)
      await c.backend.release(record)
      const next = await behind.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'successor token')
      checkEqual((await behind.readCheckpoint(next)).cleanHandoff, true, 'cleanHandoff')
    },
  },
  {
    name: 'a successor whose clock is ahead gets in early, but the fence still stops the old holder',
    unsupported: needsClientClock,
    async run(c) {
      const workId = c.workId()
      const ahead = await c.open(SKEW_MS)
      const old = await c.backend.acquire(workId, 'holder-a', 5_000)
      const successor = await ahead.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(successor.fencingToken, 2n, 'successor token')
      await checkRejects(
        () => c.backend.checkpoint(old, bytes('stale'), 5_000),
        'FENCED',
        'old holder checkpoint',
      )
      await checkRejects(() => c.backend.renew(old, 5_000), 'FENCED', 'old holder renew')
    },
  },
  {
    name: 'a renew that lands from a clock behind never moves the expiry back',
    unsupported: needsClientClock,
    async run(c) {
      // The same shape as a renew abandoned at its timeout that lands after a newer one: the late
      // write carries an older "now".
      const workId = c.workId()
      const behind = await c.open(-3_000)
      const record = await c.backend.acquire(workId, 'holder-a', 5_000)
      await behind.renew(record, 5_000)
      await behind.checkpoint(record, bytes('from behind'), 5_000)
      await c.elapse(4_000)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire 1 s before the expiry the holder was promised',
      )
    },
  },
  {
    name: 'a process whose clock is behind sees a live lease as held',
    unsupported: needsClientClock,
    async run(c) {
      const workId = c.workId()
      const behind = await c.open(-SKEW_MS)
      const record = await c.backend.acquire(workId, 'holder-a', 5_000)
      await c.elapse(6_000)
      await checkRejects(
        () => behind.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire on the slow clock',
      )
      const ok = await c.backend.acquire(workId, 'holder-c', LONG_TTL_MS)
      check(ok.fencingToken > record.fencingToken, 'acquire on the right clock after expiry')
    },
  },
  {
    name: `a released lease is free to a lister ${SKEW_MS / 1000} s behind, and not revoked by it`,
    unsupported: (caps) =>
      needsClientClock(caps) ??
      (caps.list && caps.revoke
        ? undefined
        : 'the backend cannot list and revoke (capabilities.list, revoke)'),
    async run(c) {
      const workId = c.workId()
      const behind = await c.open(-SKEW_MS)
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.release(record)
      const [listed] = (await behind.list!({ prefix: workId })).leases
      checkEqual(listed?.free, true, 'free, listed from a clock behind')
      checkEqual(await behind.revoke!(workId), false, 'revoke from a clock behind')
      checkEqual(
        await behind.revoke!(workId, { fencingToken: record.fencingToken }),
        false,
        'revoke with its token from a clock behind',
      )
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(
        (await c.backend.readCheckpoint(next)).cleanHandoff,
        true,
        'cleanHandoff after the refused revokes',
      )
    },
  },
  {
    name: `a revoked lease is not revoked again by a client whose clock is ${SKEW_MS / 1000} s behind`,
    unsupported: (caps) =>
      needsClientClock(caps) ?? (caps.revoke ? undefined : 'the backend cannot revoke (capabilities.revoke)'),
    async run(c) {
      // The revoke's "now - 1" is still ahead of a clock behind, but nobody holds the lease any more:
      // a second revoke (an operator's retry, from another host) ends nothing and says so.
      const workId = c.workId()
      const behind = await c.open(-SKEW_MS)
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      checkEqual(await c.backend.revoke!(workId), true, 'the first revoke')
      checkEqual(await behind.revoke!(workId), false, 'revoke again from a clock behind')
      checkEqual(
        await behind.revoke!(workId, { fencingToken: record.fencingToken }),
        false,
        'revoke again with its token from a clock behind',
      )
      // Its acquire may find the lease in the way until its clock passes that expiry, but a revoked
      // lease names nobody: a LEASE_HELD naming holder '' would send a waiter after no one.
      const what = 'acquire of the revoked lease from a clock behind'
      const refused = await rejection(() => behind.acquire(workId, 'holder-c', LONG_TTL_MS), what)
      check(isLeaseHeldError(refused), `${what}: expected LEASE_HELD, got ${String(refused)}`)
      check(
        refused.holder === undefined,
        `${what}: LEASE_HELD names holder ${JSON.stringify(refused.holder?.holderId)}, but a revoked lease has none`,
      )
      await c.elapse(1)
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, record.fencingToken + 1n, 'the next token')
      checkEqual((await c.backend.readCheckpoint(next)).cleanHandoff, false, 'cleanHandoff after a revoke')
    },
  },
  {
    name: 'a client clock that reads fractions of a millisecond works on every call, and its leases list for everyone',
    unsupported: needsClientClock,
    async run(c) {
      // A high-resolution wall clock (performance.timeOrigin + performance.now()) is a usable time:
      // what such a process writes must not break another process's calls, nor its list pages.
      const fine = await c.open(0.25)
      const workId = c.workId()
      const record = await fine.acquire(workId, 'holder-a', LONG_TTL_MS)
      await fine.renew(record, LONG_TTL_MS)
      await fine.checkpoint(record, bytes('fine'), LONG_TTL_MS)
      checkBytes(
        (await c.backend.readCheckpoint(record)).state,
        bytes('fine'),
        'state read by another process',
      )
      if (c.capabilities.renewMany) {
        checkEqual(JSON.stringify(await fine.renewMany!([record], LONG_TTL_MS)), '["renewed"]', 'renewMany')
      }
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire by another process',
      )
      if (c.capabilities.list) {
        for (const [who, lister] of [
          ['its own process', fine],
          ['another process', c.backend],
        ] as const) {
          const page = await lister.list!({ prefix: workId })
          const listed = page.leases.find((lease) => lease.workId === workId)
          checkEqual(listed?.fencingToken, record.fencingToken, `listed by ${who}`)
          checkEqual(listed?.free, false, `free, as listed by ${who}`)
        }
      }
      await fine.release(record)
      checkEqual(
        (await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)).fencingToken,
        2n,
        'successor token',
      )
    },
  },
  {
    name: 'a client clock is read once: the now function the backend opened with is the one every call uses',
    unsupported: needsClientClock,
    async run(c) {
      // A clock object may lie (a getter, a proxy): one read, checked, then used. A backend that reads
      // `clock.now` again at each call meets another function here, one that is an hour ahead.
      const start = c.clock.now()
      let reads = 0
      const clock = {
        get now() {
          reads++
          return reads === 1 ? () => start : () => start + 3_600_000
        },
      }
      const backend = await c.harness.open({ clock })
      const record = await backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      checkEqual(record.expiresAt.getTime(), start + LONG_TTL_MS, 'expiresAt of the acquire')
      await backend.renew(record, LONG_TTL_MS)
      await backend.checkpoint(record, bytes('once'), LONG_TTL_MS)
      // Renewed from an hour ahead, the lease would outlive its ttl by an hour.
      await c.elapse(LONG_TTL_MS)
      checkEqual(
        (await c.backend.acquire(record.workId, 'holder-b', LONG_TTL_MS)).fencingToken,
        record.fencingToken + 1n,
        'a successor once the ttl ran out on the clock the backend opened with',
      )
      checkEqual(reads, 1, 'reads of clock.now')
    },
  },
  {
    name: 'a client clock that reads no usable time fails each call, and nothing stored changes',
    unsupported: needsClientClock,
    async run(c) {
      // NaN compares false with everything: a backend that wrote `now + ttl` from such a clock would
      // store a lease nobody sees as live, or one that never expires.
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      const readings: unknown[] = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 9e15, '1']
      for (const reading of readings) {
        const broken = await c.harness.open({ clock: { now: () => reading as number } })
        const what = `with a clock reading ${String(reading)}`
        const calls: [string, () => Promise<unknown>][] = [
          ['acquire of a free workId', () => broken.acquire(c.workId('free'), 'holder-b', LONG_TTL_MS)],
          ['renew', () => broken.renew(record, LONG_TTL_MS)],
          ['checkpoint', () => broken.checkpoint(record, bytes('late'), LONG_TTL_MS)],
          ['release', () => broken.release(record)],
        ]
        for (const [call, action] of calls) {
          const error = await rejection(action, `${call} ${what}`)
          check(
            !isWorkleaseError(error) || error.code === 'INVALID_ARGUMENT',
            `${call} ${what}: a broken clock is a failure, not a lease outcome; got ${String(error)}`,
          )
        }
        await checkRejects(
          () => c.backend.acquire(workId, 'holder-c', LONG_TTL_MS),
          'LEASE_HELD',
          `the lease, after calls ${what}`,
        )
      }
      await c.backend.renew(record, LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(record)).state, null, 'state after the failed calls')
    },
  },
]
