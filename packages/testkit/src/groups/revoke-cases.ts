import { getEventListeners } from 'node:events'
import type { BackendCapabilities } from '@worklease/spec'
import { check, checkBytes, checkEqual, checkRejects, rejection, show } from '../assertions.js'
import { type CaseContext, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition, SupportContext } from '../suite-case.js'
import { bytes } from './shared.js'

const needsRevoke = (caps: BackendCapabilities) =>
  caps.revoke ? undefined : 'the backend cannot revoke leases (capabilities.revoke)'

const needsRevokeAndList = (caps: BackendCapabilities) =>
  needsRevoke(caps) ?? (caps.list ? undefined : 'the backend does not list leases (capabilities.list)')

const needsRevokeCounted = (caps: BackendCapabilities, support: SupportContext) =>
  needsRevoke(caps) ??
  (support.countsRoundTrips ? undefined : 'the harness does not count round trips (no roundTrips())')

/** The name of the case that lists a revoked lease: mutants that only it can see name it. */
export const REVOKED_LISTING_CASE = "list shows a revoked lease expired, not released, with holderId ''"

function revoke(c: CaseContext, workId: string, options?: unknown): Promise<boolean> {
  check(typeof c.backend.revoke === 'function', 'capabilities.revoke is true but backend.revoke is missing')
  const loose = c.backend as unknown as { revoke(id: string, options?: unknown): Promise<boolean> }
  return options === undefined ? loose.revoke(workId) : loose.revoke(workId, options)
}

export const revokeCases: CaseDefinition[] = [
  {
    name: 'revoke ends a live lease: the old record is FENCED everywhere, the next holder gets token + 1 and an unclean handoff',
    unsupported: needsRevoke,
    async run(c) {
      const workId = c.workId()
      const wedged = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(wedged, bytes('progress'), LONG_TTL_MS)
      checkEqual(await revoke(c, workId), true, 'revoke of a live lease')
      await checkRejects(() => c.backend.renew(wedged, LONG_TTL_MS), 'FENCED', 'renew after revoke')
      await checkRejects(
        () => c.backend.checkpoint(wedged, bytes('late'), LONG_TTL_MS),
        'FENCED',
        'checkpoint after revoke',
      )
      await checkRejects(() => c.backend.readCheckpoint(wedged), 'FENCED', 'readCheckpoint after revoke')
      await checkRejects(() => c.backend.release(wedged), 'FENCED', 'release after revoke')
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'token after revoke')
      const read = await c.backend.readCheckpoint(next)
      checkEqual(read.cleanHandoff, false, 'cleanHandoff after revoke')
      checkBytes(read.state, bytes('progress'), 'state after revoke')
      await checkRejects(
        () => c.backend.renew(wedged, LONG_TTL_MS),
        'FENCED',
        'old record after the takeover',
      )
    },
  },
  {
    name: 'revoke of a free lease (released, expired or never taken) returns false and changes nothing',
    unsupported: needsRevoke,
    async run(c) {
      checkEqual(await revoke(c, c.workId('never')), false, 'revoke of an unknown workId')
      const releasedId = c.workId('released')
      await c.backend.release(await c.backend.acquire(releasedId, 'holder-a', LONG_TTL_MS))
      checkEqual(await revoke(c, releasedId), false, 'revoke of a released lease')
      const next = await c.backend.acquire(releasedId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'token after a revoke that did nothing')
      checkEqual((await c.backend.readCheckpoint(next)).cleanHandoff, true, 'cleanHandoff kept')
      const expiredId = c.workId('expired')
      const expired = await c.backend.acquire(expiredId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      checkEqual(await revoke(c, expiredId), false, 'revoke of an expired lease')
      await c.backend.renew(expired, LONG_TTL_MS).catch(() => undefined)
    },
  },
  {
    name: 'revoke of a bad workId is INVALID_ARGUMENT before any round trip',
    unsupported: needsRevoke,
    async run(c) {
      for (const bad of ['', 7, 'a\u0000', 'x'.repeat(256)]) {
        const before = c.roundTrips()
        await checkRejects(
          () => (c.backend as unknown as { revoke(id: unknown): Promise<boolean> }).revoke(bad),
          'INVALID_ARGUMENT',
          `revoke(${JSON.stringify(bad)})`,
        )
        checkEqual(c.roundTrips(), before, 'round trips of a rejected revoke')
      }
    },
  },
  {
    name: REVOKED_LISTING_CASE,
    unsupported: needsRevokeAndList,
    async run(c) {
      const record = await c.backend.acquire(`${c.prefix}revoked`, 'holder-a', LONG_TTL_MS)
      checkEqual(await revoke(c, record.workId), true, 'revoke of a live lease')
      const page = await c.backend.list!({ prefix: c.prefix })
      const [listed] = page.leases
      checkEqual(listed?.workId, record.workId, 'workId')
      checkEqual(listed?.released, false, 'released of a revoked lease')
      checkEqual(listed?.free, true, 'free of a revoked lease')
      checkEqual(listed?.holderId, '', 'holderId of a revoked lease')
      checkEqual(listed?.fencingToken, 1n, 'fencingToken of a revoked lease')
      check(
        listed!.expiresAt.getTime() <= page.now.getTime(),
        `a revoked lease expired by page.now, got ${listed!.expiresAt.toISOString()} against ${page.now.toISOString()}`,
      )
    },
  },
  {
    name: 'revoke of an expired lease nobody took leaves it as it was: its holder can still checkpoint it',
    unsupported: needsRevoke,
    async run(c) {
      const workId = c.workId()
      const expired = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(expired, bytes('before'), SHORT_TTL_MS)
      await c.expire()
      checkEqual(await revoke(c, workId), false, 'revoke of an expired lease')
      // A checkpoint of an expired lease nobody took succeeds: revoke must not have ended it.
      const refused = await c.backend.checkpoint(expired, bytes('after'), LONG_TTL_MS).then(
        () => undefined,
        (error: unknown) => error,
      )
      check(
        refused === undefined,
        `checkpoint by the holder of an expired lease that revoke left alone: expected success, got ${show(refused)}`,
      )
      checkBytes((await c.backend.readCheckpoint(expired)).state, bytes('after'), 'state of the kept lease')
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire after the holder extended its lease',
      )
    },
  },
  {
    name: 'revoke is one round trip',
    unsupported: needsRevokeCounted,
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await revoke(c, c.workId('warm-up'))
      const before = c.roundTrips()!
      checkEqual(await revoke(c, workId), true, 'revoke of a live lease')
      checkEqual(c.roundTrips()! - before, 1, 'round trips of revoke of a live lease')
    },
  },
  {
    name: 'revoke checks its options: bad ones are INVALID_ARGUMENT, an aborted signal throws its reason, before any round trip',
    unsupported: needsRevoke,
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      const bad: Array<[string, unknown]> = [
        ['a string', 'now'],
        ['null', null],
        ['a signal that is not an AbortSignal', { signal: { aborted: true } }],
      ]
      for (const [label, options] of bad) {
        const before = c.roundTrips()
        await checkRejects(
          () => revoke(c, workId, options),
          'INVALID_ARGUMENT',
          `revoke with options ${label}`,
        )
        checkEqual(c.roundTrips(), before, `revoke with options ${label}: round trips`)
      }
      const reason = new Error('caller gave up')
      const before = c.roundTrips()
      const error = await rejection(
        () => revoke(c, workId, { signal: AbortSignal.abort(reason) }),
        'revoke with an aborted signal',
      )
      check(
        error === reason,
        `revoke with an aborted signal must throw the signal's reason, got ${show(error)}`,
      )
      checkEqual(c.roundTrips(), before, 'revoke with an aborted signal: round trips')
      await c.backend.renew(record, LONG_TTL_MS)
      const { signal } = new AbortController()
      checkEqual(await revoke(c, workId, { signal }), true, 'revoke with a live signal')
      checkEqual(getEventListeners(signal, 'abort').length, 0, "the signal's abort listeners after revoke")
    },
  },
]
