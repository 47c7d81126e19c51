import { isWorkleaseError } from '@worklease/spec'
import { check, checkBytes, checkEqual, checkRejects, rejection, show } from '../assertions.js'
import { forge, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes, needsFailNextCall } from './shared.js'

/** The name of the store-failure case: the mutant that only it can see names it. */
export const STORE_FAILURE_CASE =
  'a failure of the store is passed on as the client threw it, never as FENCED or another lease outcome'

export const renewCases: CaseDefinition[] = [
  {
    name: 'renew keeps a lease held past its original expiry',
    async run(c) {
      const workId = c.workId()
      const ttl = c.clientClock ? SHORT_TTL_MS : 2_000
      const record = await c.backend.acquire(workId, 'holder-a', ttl)
      await c.elapse(ttl * 0.6)
      await c.backend.renew(record, ttl)
      await c.elapse(ttl * 0.6)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire after renew',
      )
    },
  },
  {
    name: 'renew never shortens a live lease: a shorter ttl keeps the later expiry',
    async run(c) {
      const workId = c.workId()
      const ttl = c.clientClock ? 1_000 : 3_000
      const record = await c.backend.acquire(workId, 'holder-a', ttl)
      await c.backend.renew(record, SHORT_TTL_MS)
      await c.expire()
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire after a shorter renew, before the first expiry',
      )
      if (c.clientClock) {
        await c.elapse(ttl - SHORT_TTL_MS - 1)
        await checkRejects(
          () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
          'LEASE_HELD',
          '1 ms before the first expiry',
        )
        await c.elapse(1)
        const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
        checkEqual(next.fencingToken, 2n, 'token once the first expiry passed')
      }
    },
  },
  {
    name: 'renew extends to now + ttl when that is later, exactly on a client clock',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.elapse(SHORT_TTL_MS / 2)
      await c.backend.renew(record, 1_000)
      if (!c.clientClock) return
      await c.elapse(999)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        '1 ms before now + ttl',
      )
      await c.elapse(1)
      checkEqual((await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)).fencingToken, 2n, 'token')
    },
  },
  {
    name: 'renew can be repeated with identical values (a retried renew whose reply was lost)',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await c.backend.renew(record, LONG_TTL_MS)
      await c.backend.renew(record, LONG_TTL_MS)
      await c.backend.renew(record, LONG_TTL_MS)
    },
  },
  {
    name: 'renew of an expired lease that nobody took is LEASE_EXPIRED',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', SHORT_TTL_MS)
      await c.expire()
      await checkRejects(() => c.backend.renew(record, LONG_TTL_MS), 'LEASE_EXPIRED', 'renew after expiry')
    },
  },
  {
    name: 'a refused renew leaves the lease free for a successor',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      await checkRejects(() => c.backend.renew(record, LONG_TTL_MS), 'LEASE_EXPIRED', 'renew after expiry')
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'successor token')
    },
  },
  {
    name: 'renew after a takeover is FENCED',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      await checkRejects(() => c.backend.renew(record, LONG_TTL_MS), 'FENCED', 'renew by the old holder')
    },
  },
  {
    name: 'renew after release is FENCED',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await c.backend.release(record)
      await checkRejects(() => c.backend.renew(record, LONG_TTL_MS), 'FENCED', 'renew after release')
    },
  },
  {
    name: 'renew with the right token but another holderId is FENCED',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await checkRejects(
        () => c.backend.renew(forge(record, { holderId: 'holder-b' }), LONG_TTL_MS),
        'FENCED',
        'forged holder',
      )
      await c.backend.renew(record, LONG_TTL_MS)
    },
  },
  {
    name: 'a record with the right token but another holderId is FENCED on every call once its lease expired, and changes nothing',
    async run(c) {
      // A valid record matches the stored token and holderId both: the expiry is judged only for one
      // that does. Judged first, a stranger's record of an expired lease nobody took would get
      // LEASE_EXPIRED from renew, or take the lease over by checkpoint or release.
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(record, bytes('holder-a'), SHORT_TTL_MS)
      await c.expire()
      const forged = forge(record, { holderId: 'holder-b' })
      await checkRejects(() => c.backend.renew(forged, LONG_TTL_MS), 'FENCED', 'renew')
      if (c.capabilities.renewMany) {
        checkEqual(show(await c.backend.renewMany!([forged], LONG_TTL_MS)), show(['fenced']), 'renewMany')
      }
      await checkRejects(
        () => c.backend.checkpoint(forged, bytes('holder-b'), LONG_TTL_MS),
        'FENCED',
        'checkpoint',
      )
      await checkRejects(() => c.backend.readCheckpoint(forged), 'FENCED', 'readCheckpoint')
      await checkRejects(() => c.backend.release(forged), 'FENCED', 'release')
      // Still expired, unreleased and its holder's: the next holder reads an unclean handoff of its state.
      await checkRejects(() => c.backend.renew(record, LONG_TTL_MS), 'LEASE_EXPIRED', "the holder's renew")
      const next = await c.backend.acquire(workId, 'holder-c', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'token of the next holder')
      const read = await c.backend.readCheckpoint(next)
      checkEqual(read.cleanHandoff, false, 'cleanHandoff after the lease expired')
      checkBytes(read.state, bytes('holder-a'), 'state the next holder reads')
    },
  },
  {
    name: 'a record of an earlier lease of the same holder is FENCED and does not extend its current lease',
    async run(c) {
      // Matched by holderId alone (or by a token at most the stored one), a stale record of a holder
      // that took the workId again would keep its current lease alive past the expiry it was given.
      const workId = c.workId()
      const first = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.release(first)
      await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await checkRejects(() => c.backend.renew(first, LONG_TTL_MS), 'FENCED', 'renew of the first lease')
      await checkRejects(
        () => c.backend.checkpoint(first, bytes('stale'), LONG_TTL_MS),
        'FENCED',
        'checkpoint of the first lease',
      )
      await c.expire()
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 3n, 'token once the second lease expired')
    },
  },
  {
    name: 'renew with a token from the future is FENCED',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await checkRejects(
        () => c.backend.renew(forge(record, { fencingToken: record.fencingToken + 1n }), LONG_TTL_MS),
        'FENCED',
        'forged token',
      )
    },
  },
  {
    name: 'renew of a workId never acquired is FENCED',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await checkRejects(
        () => c.backend.renew(forge(record, { workId: c.workId('never') }), LONG_TTL_MS),
        'FENCED',
        'unknown workId',
      )
    },
  },
  {
    name: STORE_FAILURE_CASE,
    unsupported: needsFailNextCall,
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(record, bytes('kept'), LONG_TTL_MS)
      const calls: Array<[string, () => Promise<unknown>]> = [
        ['renew', () => c.backend.renew(record, LONG_TTL_MS)],
        ['checkpoint', () => c.backend.checkpoint(record, bytes('lost'), LONG_TTL_MS)],
        ['readCheckpoint', () => c.backend.readCheckpoint(record)],
        ['release', () => c.backend.release(record)],
        ['acquire of a new workId', () => c.backend.acquire(c.workId('new'), 'holder-b', LONG_TTL_MS)],
        ['acquire of the held lease', () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)],
      ]
      // The optional operations too: a failure never comes back as per-record outcomes, a held lease,
      // "nothing revoked" or an empty page.
      const b = c.backend
      if (c.capabilities.renewMany) calls.push(['renewMany', () => b.renewMany!([record], LONG_TTL_MS)])
      if (c.capabilities.acquireWithCheckpoint) {
        calls.push(
          [
            'acquireWithCheckpoint of a new workId',
            () => b.acquireWithCheckpoint!(c.workId('new'), 'holder-b', LONG_TTL_MS),
          ],
          [
            'acquireWithCheckpoint of the held lease',
            () => b.acquireWithCheckpoint!(workId, 'holder-b', LONG_TTL_MS),
          ],
        )
      }
      const revoked = c.capabilities.revoke
        ? await b.acquire(c.workId('revoked'), 'holder-c', LONG_TTL_MS)
        : undefined
      if (revoked) calls.push(['revoke', () => b.revoke!(revoked.workId)])
      if (c.capabilities.list) calls.push(['list', () => b.list!({ prefix: workId })])
      for (const [name, call] of calls) {
        c.failNextCall()
        const error = await rejection(call, `${name} when the store fails`)
        check(
          !isWorkleaseError(error),
          `${name} when the store fails: expected the store's own error, got ${show(error)}`,
        )
      }
      await c.backend.renew(record, LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('kept'), 'state after the failures')
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'the lease after the failures',
      )
      if (revoked) {
        await checkRejects(
          () => b.acquire(revoked.workId, 'holder-b', LONG_TTL_MS),
          'LEASE_HELD',
          'the lease a failed revoke named',
        )
      }
    },
  },
]
