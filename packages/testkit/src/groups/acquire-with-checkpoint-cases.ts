import type { AcquiredWithCheckpoint, BackendCapabilities } from '@worklease/spec'
import { isLeaseHeldError, isWorkleaseError, MAX_FENCING_TOKEN } from '@worklease/spec'
import { check, checkBytes, checkEqual, checkRejects, rejection, show } from '../assertions.js'
import { type CaseContext, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition, SupportContext } from '../suite-case.js'
import { bytes, checkRecord } from './shared.js'

const needsIt = (caps: BackendCapabilities) =>
  caps.acquireWithCheckpoint
    ? undefined
    : 'the backend has no acquireWithCheckpoint (capabilities.acquireWithCheckpoint)'

const needsItCounted = (caps: BackendCapabilities, support: SupportContext) =>
  needsIt(caps) ??
  (support.countsRoundTrips ? undefined : 'the harness does not count round trips (no roundTrips())')

const needsItSeeded = (caps: BackendCapabilities, support: SupportContext) =>
  needsIt(caps) ??
  (support.seedsTokens ? undefined : 'the harness cannot store a token directly (no seedToken())')

const needsItAndRevoke = (caps: BackendCapabilities) =>
  needsIt(caps) ?? (caps.revoke ? undefined : 'the backend cannot revoke leases (capabilities.revoke)')

const needsItAndHolder = (caps: BackendCapabilities) =>
  needsIt(caps) ??
  (caps.reportsHolder ? undefined : 'the backend does not report the holder (capabilities.reportsHolder)')

/** The name of the token-ceiling case: mutants that only it can see name it. */
export const WITH_CHECKPOINT_CEILING_CASE =
  'at the token ceiling it is TOKENS_EXHAUSTED, as acquire says it, and changes nothing'

/** The name of the case that takes over a revoked lease: mutants that only it can see name it. */
export const WITH_CHECKPOINT_REVOKE_CASE =
  'after a revoke it returns the state kept and an unclean handoff, like readCheckpoint'

function take(c: CaseContext, workId: string, holderId: string, ttlMs = LONG_TTL_MS) {
  check(
    typeof c.backend.acquireWithCheckpoint === 'function',
    'capabilities.acquireWithCheckpoint is true but backend.acquireWithCheckpoint is missing',
  )
  return c.backend.acquireWithCheckpoint(workId, holderId, ttlMs)
}

/** The acquire's read agrees with a readCheckpoint of the same record, made right after it. */
async function checkAgreesWithRead(c: CaseContext, taken: AcquiredWithCheckpoint, what: string) {
  const read = await c.backend.readCheckpoint(taken.record)
  checkBytes(taken.checkpoint.state, read.state, `${what}: state against readCheckpoint`)
  checkEqual(taken.checkpoint.cleanHandoff, read.cleanHandoff, `${what}: cleanHandoff against readCheckpoint`)
}

export const acquireWithCheckpointCases: CaseDefinition[] = [
  {
    name: 'a new workId: token 1, no state, a clean handoff, expiring at now + ttl',
    unsupported: needsIt,
    async run(c) {
      const workId = c.workId()
      const startedAt = Date.now()
      const taken = await take(c, workId, 'holder-a')
      checkRecord(c, taken.record, {
        workId,
        holderId: 'holder-a',
        fencingToken: 1n,
        ttlMs: LONG_TTL_MS,
        startedAt,
      })
      checkBytes(taken.checkpoint.state, null, 'state')
      checkEqual(taken.checkpoint.cleanHandoff, true, 'cleanHandoff')
      await checkAgreesWithRead(c, taken, 'new workId')
    },
  },
  {
    name: 'after a release it returns the last checkpoint and a clean handoff; the record works',
    unsupported: needsIt,
    async run(c) {
      const workId = c.workId()
      const first = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(first, bytes('step 1'), LONG_TTL_MS)
      await c.backend.checkpoint(first, bytes('step 2'), LONG_TTL_MS)
      await c.backend.release(first)
      const taken = await take(c, workId, 'holder-b')
      checkEqual(taken.record.fencingToken, 2n, 'token of the successor')
      checkBytes(taken.checkpoint.state, bytes('step 2'), 'state')
      checkEqual(taken.checkpoint.cleanHandoff, true, 'cleanHandoff')
      await checkAgreesWithRead(c, taken, 'after release')
      await c.backend.renew(taken.record, LONG_TTL_MS)
      await c.backend.checkpoint(taken.record, bytes('step 3'), LONG_TTL_MS)
      await checkRejects(() => c.backend.renew(first, LONG_TTL_MS), 'FENCED', 'the predecessor')
      await c.backend.release(taken.record)
      const next = await take(c, workId, 'holder-a')
      checkBytes(next.checkpoint.state, bytes('step 3'), 'state the successor wrote')
    },
  },
  {
    name: 'an empty state comes back as an empty state, not as none',
    unsupported: needsIt,
    async run(c) {
      const workId = c.workId()
      const first = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(first, new Uint8Array(0), LONG_TTL_MS)
      await c.backend.release(first)
      const taken = await take(c, workId, 'holder-b')
      checkBytes(taken.checkpoint.state, new Uint8Array(0), 'state')
      await checkAgreesWithRead(c, taken, 'an empty state')
    },
  },
  {
    name: 'after a crash (expiry) it returns the state kept and an unclean handoff',
    unsupported: needsIt,
    async run(c) {
      const workId = c.workId()
      const crashed = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(crashed, bytes('half done'), SHORT_TTL_MS)
      await c.expire()
      const taken = await take(c, workId, 'holder-b')
      checkEqual(taken.record.fencingToken, 2n, 'token of the successor')
      checkBytes(taken.checkpoint.state, bytes('half done'), 'state')
      checkEqual(taken.checkpoint.cleanHandoff, false, 'cleanHandoff')
      await checkAgreesWithRead(c, taken, 'after a crash')
      await checkRejects(
        () => c.backend.checkpoint(crashed, bytes('late'), LONG_TTL_MS),
        'FENCED',
        'the crashed holder',
      )
    },
  },
  {
    name: 'a held lease is LEASE_HELD, as acquire says it, and the holder keeps it untouched',
    unsupported: needsIt,
    async run(c) {
      const workId = c.workId()
      const held = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(held, bytes('mine'), LONG_TTL_MS)
      for (const holderId of ['holder-b', 'holder-a']) {
        const error = await rejection(() => take(c, workId, holderId), `acquireWithCheckpoint by ${holderId}`)
        check(
          isLeaseHeldError(error),
          `acquireWithCheckpoint by ${holderId}: expected LEASE_HELD, got ${show(error)}`,
        )
        if (c.capabilities.reportsHolder) {
          checkEqual(error.holder?.holderId, 'holder-a', `${holderId}: LEASE_HELD names the holder`)
          checkEqual(error.holder?.fencingToken, 1n, `${holderId}: LEASE_HELD names its token`)
        }
      }
      await c.backend.renew(held, LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(held)).state, bytes('mine'), 'the holder reads its state')
      await c.backend.release(held)
      checkEqual((await take(c, workId, 'holder-b')).record.fencingToken, 2n, 'token after the refusals')
    },
  },
  {
    name: 'tokens go up by one, alternating with plain acquires, and each read is the one before it',
    unsupported: needsIt,
    timeoutMs: 30_000,
    async run(c) {
      const workId = c.workId()
      let previous: string | null = null
      for (let i = 1; i <= 20; i++) {
        const holderId = `holder-${i % 3}`
        if (i % 2 === 0) {
          const record = await c.backend.acquire(workId, holderId, LONG_TTL_MS)
          checkEqual(record.fencingToken, BigInt(i), `token of cycle ${i} (acquire)`)
          await c.backend.checkpoint(record, bytes(`cycle ${i}`), LONG_TTL_MS)
          await c.backend.release(record)
        } else {
          const taken = await take(c, workId, holderId)
          checkEqual(taken.record.fencingToken, BigInt(i), `token of cycle ${i} (acquireWithCheckpoint)`)
          checkBytes(
            taken.checkpoint.state,
            previous === null ? null : bytes(previous),
            `state at cycle ${i}`,
          )
          await c.backend.checkpoint(taken.record, bytes(`cycle ${i}`), LONG_TTL_MS)
          await c.backend.release(taken.record)
        }
        previous = `cycle ${i}`
      }
    },
  },
  {
    name: "a large state comes back whole, and the bytes returned are the caller's own copy",
    unsupported: needsIt,
    async run(c) {
      const workId = c.workId()
      const size = Math.min(c.capabilities.maxStateBytes, 1024 * 1024)
      const state = new Uint8Array(size)
      for (let i = 0; i < size; i++) state[i] = (i * 31 + 7) & 0xff
      const first = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(first, state, LONG_TTL_MS)
      await c.backend.release(first)
      const taken = await take(c, workId, 'holder-b')
      checkBytes(taken.checkpoint.state, state, `a ${size}-byte state`)
      taken.checkpoint.state?.fill(0)
      checkBytes(
        (await c.backend.readCheckpoint(taken.record)).state,
        state,
        'state after the caller wrote into its copy',
      )
    },
  },
  {
    name: 'acquireWithCheckpoint is one round trip on its happy path, like acquire',
    unsupported: needsItCounted,
    async run(c) {
      const acquireTrips = c.harness.acquireRoundTrips ?? 1
      const workId = c.workId()
      const warm = await take(c, c.workId('warm-up'), 'holder-a')
      await c.backend.release(warm.record)
      const count = async (holderId: string) => {
        const before = c.roundTrips()!
        const taken = await take(c, workId, holderId)
        const trips = c.roundTrips()! - before
        return { taken, trips }
      }
      const fresh = await count('holder-a')
      checkEqual(fresh.trips, acquireTrips, 'acquireWithCheckpoint of a new workId')
      await c.backend.checkpoint(fresh.taken.record, bytes('resume here'), LONG_TTL_MS)
      await c.backend.release(fresh.taken.record)
      const resumed = await count('holder-b')
      checkEqual(resumed.trips, acquireTrips, 'acquireWithCheckpoint of a released lease with a state')
      checkBytes(resumed.taken.checkpoint.state, bytes('resume here'), 'state')
    },
  },
  {
    name: WITH_CHECKPOINT_CEILING_CASE,
    unsupported: needsItSeeded,
    async run(c) {
      const workId = c.workId()
      await c.seedToken(workId, MAX_FENCING_TOKEN)
      for (const holderId of ['holder-a', 'holder-b']) {
        const error = await rejection(() => take(c, workId, holderId), `acquireWithCheckpoint by ${holderId}`)
        check(
          isWorkleaseError(error, 'TOKENS_EXHAUSTED'),
          `acquireWithCheckpoint at MAX_FENCING_TOKEN: expected TOKENS_EXHAUSTED, got ${show(error)}`,
        )
      }
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-a', LONG_TTL_MS),
        'TOKENS_EXHAUSTED',
        'acquire after the refused acquireWithCheckpoint',
      )
    },
  },
  {
    name: "its LEASE_HELD names the holder as acquire's does: holderId, token, expiresAt and expiresInMs",
    unsupported: needsItAndHolder,
    async run(c) {
      const workId = c.workId()
      const held = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      const error = await rejection(
        () => take(c, workId, 'holder-b'),
        'acquireWithCheckpoint of a held lease',
      )
      check(isLeaseHeldError(error), `expected LEASE_HELD, got ${show(error)}`)
      const { holder } = error
      check(
        holder !== undefined,
        'LeaseHeldError.holder is missing though capabilities.reportsHolder is true',
      )
      checkEqual(holder.holderId, 'holder-a', 'holder.holderId')
      checkEqual(holder.fencingToken, held.fencingToken, 'holder.fencingToken')
      check(holder.expiresAt instanceof Date, 'holder.expiresAt must be a Date')
      if (c.clientClock) {
        checkEqual(holder.expiresAt.getTime(), held.expiresAt.getTime(), 'holder.expiresAt')
        checkEqual(holder.expiresInMs, LONG_TTL_MS, 'holder.expiresInMs')
      } else {
        const drift = Math.abs(holder.expiresAt.getTime() - held.expiresAt.getTime())
        check(drift <= 5_000, `holder.expiresAt is ${drift} ms off the record's`)
        check(
          holder.expiresInMs > LONG_TTL_MS - 10_000 && holder.expiresInMs <= LONG_TTL_MS + 5_000,
          `holder.expiresInMs ${holder.expiresInMs} is not what is left of a ${LONG_TTL_MS} ms lease just taken`,
        )
      }
    },
  },
  {
    // The cases above refuse the first tenure, at token 1: a LEASE_HELD naming the first tenure's
    // token, the caller's next one only past it, or the token through a double all read right there.
    name: "its LEASE_HELD names the holding tenure's token as acquire's does: after earlier tenures, and past 2^53",
    unsupported: needsItAndHolder,
    async run(c) {
      const cycled = c.workId('cycled')
      for (let i = 0; i < 2; i++) {
        await c.backend.release(await c.backend.acquire(cycled, 'holder-a', LONG_TTL_MS))
      }
      const leases: Array<[string, string]> = [[cycled, 'after two released tenures']]
      if (c.harness.seedToken) {
        // 2^53 + 1 comes back from a double as 2^53.
        const seeded = c.workId('seeded')
        await c.seedToken(seeded, 2n ** 53n)
        leases.push([seeded, 'at 2^53 + 1'])
      }
      for (const [workId, what] of leases) {
        const held = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
        for (const holderId of ['holder-b', 'holder-a']) {
          const byAcquire = await rejection(
            () => c.backend.acquire(workId, holderId, LONG_TTL_MS),
            `${what}: acquire by ${holderId}`,
          )
          const byTake = await rejection(
            () => take(c, workId, holderId),
            `${what}: acquireWithCheckpoint by ${holderId}`,
          )
          check(
            isLeaseHeldError(byAcquire),
            `${what}: acquire by ${holderId}: expected LEASE_HELD, got ${show(byAcquire)}`,
          )
          check(
            isLeaseHeldError(byTake),
            `${what}: acquireWithCheckpoint by ${holderId}: expected LEASE_HELD, got ${show(byTake)}`,
          )
          checkEqual(
            byTake.holder?.holderId,
            'holder-a',
            `${what}, by ${holderId}: LEASE_HELD names the holder`,
          )
          checkEqual(
            byTake.holder?.fencingToken,
            held.fencingToken,
            `${what}, by ${holderId}: LEASE_HELD names the holding tenure's token`,
          )
          checkEqual(
            byTake.holder?.fencingToken,
            byAcquire.holder?.fencingToken,
            `${what}, by ${holderId}: LEASE_HELD's token against acquire's`,
          )
        }
        await c.backend.release(held)
        checkEqual(
          (await take(c, workId, 'holder-b')).record.fencingToken,
          held.fencingToken + 1n,
          `${what}: token after the refusals`,
        )
      }
    },
  },
  {
    name: WITH_CHECKPOINT_REVOKE_CASE,
    unsupported: needsItAndRevoke,
    async run(c) {
      const workId = c.workId()
      const wedged = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(wedged, bytes('progress'), LONG_TTL_MS)
      checkEqual(await c.backend.revoke!(workId), true, 'revoke of a live lease')
      const taken = await take(c, workId, 'holder-b')
      checkEqual(taken.record.fencingToken, 2n, 'token after revoke')
      checkBytes(taken.checkpoint.state, bytes('progress'), 'state after revoke')
      checkEqual(taken.checkpoint.cleanHandoff, false, 'cleanHandoff after revoke')
      await checkAgreesWithRead(c, taken, 'after revoke')
    },
  },
]
