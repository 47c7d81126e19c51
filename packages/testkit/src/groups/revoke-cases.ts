import { getEventListeners } from 'node:events'
import { type BackendCapabilities, type LeaseRecord, MAX_FENCING_TOKEN } from '@worklease/spec'
import { check, checkBytes, checkEqual, checkRejects, outcome, rejection, show } from '../assertions.js'
import { type CaseContext, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition, SupportContext } from '../suite-case.js'
import { BAD_IDS, bytes } from './shared.js'

const needsRevoke = (caps: BackendCapabilities) =>
  caps.revoke ? undefined : 'the backend cannot revoke leases (capabilities.revoke)'

const needsRevokeAndList = (caps: BackendCapabilities) =>
  needsRevoke(caps) ?? (caps.list ? undefined : 'the backend does not list leases (capabilities.list)')

const needsRevokeCounted = (caps: BackendCapabilities, support: SupportContext) =>
  needsRevoke(caps) ??
  (support.countsRoundTrips ? undefined : 'the harness does not count round trips (no roundTrips())')

const needsRevokeSeeded = (caps: BackendCapabilities, support: SupportContext) =>
  needsRevoke(caps) ?? (support.seedsTokens ? undefined : 'the harness cannot seed a token (no seedToken())')

/** How `list` shows `workId` (holder, token, expiry, released), or `undefined` where it cannot list. */
async function listedAs(c: CaseContext, workId: string): Promise<string | undefined> {
  if (!c.capabilities.list) return undefined
  const lease = (await c.backend.list!({ prefix: workId })).leases.find((listed) => listed.workId === workId)
  return lease && `${lease.holderId} ${lease.fencingToken} ${lease.expiresAt.toISOString()} ${lease.released}`
}

/** The name of the case that lists a revoked lease: mutants that only it can see name it. */
export const REVOKED_LISTING_CASE =
  "list shows a revoked lease expired, not released, with holderId '' and its checkpoint kept"

function revoke(c: CaseContext, workId: string, options?: unknown): Promise<boolean> {
  check(typeof c.backend.revoke === 'function', 'capabilities.revoke is true but backend.revoke is missing')
  const loose = c.backend as unknown as { revoke(id: string, options?: unknown): Promise<boolean> }
  return options === undefined ? loose.revoke(workId) : loose.revoke(workId, options)
}

/**
 * The holder of `record` still has its lease, as if no revoke had been asked: it renews, checkpoints
 * and reads its state, and nobody else can take the lease.
 */
async function checkStillHeld(c: CaseContext, record: LeaseRecord, what: string): Promise<void> {
  const renewed = await outcome(() => c.backend.renew(record, LONG_TTL_MS))
  checkEqual(renewed, 'ok', `${what}: renew by the holder (token ${record.fencingToken})`)
  await c.backend.checkpoint(record, bytes(`after ${what}`), LONG_TTL_MS)
  checkBytes((await c.backend.readCheckpoint(record)).state, bytes(`after ${what}`), `${what}: state`)
  await checkRejects(
    () => c.backend.acquire(record.workId, 'holder-z', LONG_TTL_MS),
    'LEASE_HELD',
    `${what}: acquire by another holder`,
  )
}

/**
 * The lease an operator looked at (holder-a, token 1) expired and holder-b took it over (token 2):
 * the stale record and the current one, of a fresh workId.
 */
async function takenOver(
  c: CaseContext,
): Promise<{ workId: string; looked: LeaseRecord; holder: LeaseRecord }> {
  const workId = c.workId()
  const looked = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
  await c.expire()
  const holder = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
  checkEqual(holder.fencingToken, 2n, 'token of the takeover')
  return { workId, looked, holder }
}

/** Options whose `fencingToken` answers `first` on its first read and `later` on every other. */
function shiftingToken(first: unknown, later: unknown): { options: object; reads: () => number } {
  let reads = 0
  const options = {}
  Object.defineProperty(options, 'fencingToken', {
    enumerable: true,
    get: () => (++reads === 1 ? first : later),
  })
  return { options, reads: () => reads }
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
      // Nothing changed is nothing listed differently either: holder, token, expiry, released mark.
      const listedBefore = await listedAs(c, releasedId)
      checkEqual(await revoke(c, releasedId), false, 'revoke of a released lease')
      checkEqual(await listedAs(c, releasedId), listedBefore, 'the released lease as listed after the revoke')
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
    name: 'revoke with the current fencingToken ends the lease, as revoke without one does',
    unsupported: needsRevoke,
    async run(c) {
      const workId = c.workId()
      // Token 2, so that a driver comparing with anything but the stored token is seen.
      await c.backend.release(await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS))
      const wedged = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      await c.backend.checkpoint(wedged, bytes('progress'), LONG_TTL_MS)
      checkEqual(
        await revoke(c, workId, { fencingToken: 2n }),
        true,
        'revoke with the current token (2n) of a live lease',
      )
      await checkRejects(() => c.backend.renew(wedged, LONG_TTL_MS), 'FENCED', 'renew after revoke')
      checkEqual(
        await revoke(c, workId, { fencingToken: 2n }),
        false,
        'a second revoke with the same token (the lease is already ended)',
      )
      const next = await c.backend.acquire(workId, 'holder-c', LONG_TTL_MS)
      checkEqual(next.fencingToken, 3n, 'token after revoke')
      const read = await c.backend.readCheckpoint(next)
      checkEqual(read.cleanHandoff, false, 'cleanHandoff after revoke')
      checkBytes(read.state, bytes('progress'), 'state after revoke')
    },
  },
  {
    name: 'revoke with a stale or future fencingToken returns false and changes nothing: the holder keeps renewing',
    unsupported: needsRevoke,
    async run(c) {
      const { workId, looked, holder } = await takenOver(c)
      await c.backend.checkpoint(holder, bytes('mine'), LONG_TTL_MS)
      for (const [label, fencingToken] of [
        ['the stale token 1n (before the takeover)', looked.fencingToken],
        ['the future token 3n', 3n],
        ['the largest token', MAX_FENCING_TOKEN],
      ] as const) {
        checkEqual(await revoke(c, workId, { fencingToken }), false, `revoke with ${label}`)
        await checkStillHeld(c, holder, `revoke with ${label}`)
      }
      const read = await c.backend.readCheckpoint(holder)
      checkEqual(read.cleanHandoff, false, 'cleanHandoff of the takeover, unchanged')
      // The refused revokes left the lease live, at its token: the current token still ends it.
      checkEqual(await revoke(c, workId, { fencingToken: 2n }), true, 'revoke with the current token')
    },
  },
  {
    // The CLI sends every revoke with both: a driver whose signal path forgets the token is seen here.
    name: 'revoke with a fencingToken and a live signal (as the CLI sends it): a stale token returns false and the holder keeps renewing, the current one ends the lease',
    unsupported: needsRevoke,
    async run(c) {
      const { workId, looked, holder } = await takenOver(c)
      const { signal } = new AbortController()
      for (const [label, fencingToken] of [
        ['the stale token 1n (before the takeover)', looked.fencingToken],
        ['the future token 3n', 3n],
      ] as const) {
        checkEqual(
          await revoke(c, workId, { fencingToken, signal }),
          false,
          `revoke with ${label} and a live signal`,
        )
        await checkStillHeld(c, holder, `revoke with ${label} and a live signal`)
      }
      checkEqual(
        await revoke(c, workId, { fencingToken: holder.fencingToken, signal }),
        true,
        'revoke with the current token (2n) and a live signal',
      )
      await checkRejects(() => c.backend.renew(holder, LONG_TTL_MS), 'FENCED', 'renew after revoke')
      checkEqual(
        await revoke(c, workId, { fencingToken: holder.fencingToken, signal }),
        false,
        'a second revoke with the same token and a live signal (the lease is already ended)',
      )
      checkEqual(
        getEventListeners(signal, 'abort').length,
        0,
        "the signal's abort listeners after the revokes",
      )
    },
  },
  {
    // A driver that caches one statement for both shapes (keyed without the token) would compile the
    // one without the token first here and then drop every token it is given.
    name: 'revoke without a fencingToken, then with one, on the same backend: the token revokes still compare it',
    unsupported: needsRevoke,
    async run(c) {
      const plainId = c.workId('plain')
      const plain = await c.backend.acquire(plainId, 'holder-a', LONG_TTL_MS)
      checkEqual(
        await revoke(c, plainId),
        true,
        "the backend's first revoke, without a token, of a live lease",
      )
      await checkRejects(() => c.backend.renew(plain, LONG_TTL_MS), 'FENCED', 'renew after revoke')
      const { workId, looked, holder } = await takenOver(c)
      checkEqual(
        await revoke(c, workId, { fencingToken: looked.fencingToken }),
        false,
        'then revoke with the stale token 1n (before the takeover)',
      )
      await checkStillHeld(c, holder, 'revoke with the stale token after a revoke without one')
      checkEqual(
        await revoke(c, workId, { fencingToken: holder.fencingToken }),
        true,
        'then revoke with the current token (2n)',
      )
      await checkRejects(() => c.backend.renew(holder, LONG_TTL_MS), 'FENCED', 'renew after revoke')
      // And without one again: whoever holds the lease.
      const next = await c.backend.acquire(workId, 'holder-c', LONG_TTL_MS)
      checkEqual(await revoke(c, workId), true, 'then revoke without a token of the next holder')
      await checkRejects(() => c.backend.renew(next, LONG_TTL_MS), 'FENCED', 'renew after that revoke')
    },
  },
  {
    // The other order: the statement with the token compiled first must not serve a revoke without one.
    name: 'revoke with a fencingToken, then without one, on the same backend: the revoke without one ends whoever holds the lease',
    unsupported: needsRevoke,
    async run(c) {
      const { workId, looked, holder } = await takenOver(c)
      checkEqual(
        await revoke(c, workId, { fencingToken: looked.fencingToken }),
        false,
        "the backend's first revoke, with the stale token 1n (before the takeover)",
      )
      await checkStillHeld(c, holder, 'the first revoke, with the stale token')
      const plainId = c.workId('plain')
      const plain = await c.backend.acquire(plainId, 'holder-a', LONG_TTL_MS)
      checkEqual(await revoke(c, plainId), true, 'then revoke without a token of a live lease')
      await checkRejects(() => c.backend.renew(plain, LONG_TTL_MS), 'FENCED', 'renew after revoke')
      checkEqual(await revoke(c, plainId), false, 'revoke without a token of the lease it just ended')
      // And with a token again: the stale one is still refused, the current one ends the lease.
      checkEqual(
        await revoke(c, workId, { fencingToken: looked.fencingToken }),
        false,
        'then revoke with the stale token 1n again',
      )
      await checkStillHeld(c, holder, 'the stale token after a revoke without one')
      checkEqual(
        await revoke(c, workId, { fencingToken: holder.fencingToken }),
        true,
        'then revoke with the current token (2n)',
      )
      await checkRejects(() => c.backend.renew(holder, LONG_TTL_MS), 'FENCED', 'renew after revoke')
    },
  },
  {
    name: 'revoke with a fencingToken of a free lease (released, expired or never taken) returns false and changes nothing',
    unsupported: needsRevoke,
    async run(c) {
      const neverId = c.workId('never')
      checkEqual(await revoke(c, neverId, { fencingToken: 1n }), false, 'revoke of an unknown workId')
      const first = await c.backend.acquire(neverId, 'holder-a', LONG_TTL_MS)
      checkEqual(first.fencingToken, 1n, 'first token of a workId only a revoke named')
      checkEqual((await c.backend.readCheckpoint(first)).cleanHandoff, true, 'its cleanHandoff')

      const releasedId = c.workId('released')
      const released = await c.backend.acquire(releasedId, 'holder-a', LONG_TTL_MS)
      await c.backend.release(released)
      checkEqual(
        await revoke(c, releasedId, { fencingToken: released.fencingToken }),
        false,
        'revoke of a released lease with its token',
      )
      const next = await c.backend.acquire(releasedId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'token after a revoke that did nothing')
      checkEqual((await c.backend.readCheckpoint(next)).cleanHandoff, true, 'cleanHandoff kept')

      const expiredId = c.workId('expired')
      const expired = await c.backend.acquire(expiredId, 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(expired, bytes('before'), SHORT_TTL_MS)
      await c.expire()
      checkEqual(
        await revoke(c, expiredId, { fencingToken: expired.fencingToken }),
        false,
        'revoke of an expired lease with its token',
      )
      // An expired lease nobody took is revived by its holder's checkpoint, then renewed.
      const revived = await outcome(() => c.backend.checkpoint(expired, bytes('after'), LONG_TTL_MS))
      checkEqual(revived, 'ok', 'checkpoint by the holder of the expired lease the revoke left alone')
      await checkStillHeld(c, expired, 'revoke of an expired lease with its token')
    },
  },
  {
    name: 'revoke with the largest token ends a lease held at MAX_FENCING_TOKEN; one below does not',
    unsupported: needsRevokeSeeded,
    async run(c) {
      const workId = c.workId()
      await c.seedToken(workId, MAX_FENCING_TOKEN - 1n)
      const last = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      checkEqual(last.fencingToken, MAX_FENCING_TOKEN, 'the largest token')
      checkEqual(
        await revoke(c, workId, { fencingToken: MAX_FENCING_TOKEN - 1n }),
        false,
        'revoke with MAX_FENCING_TOKEN - 1n (equal to it as a double)',
      )
      await checkStillHeld(c, last, 'revoke with MAX_FENCING_TOKEN - 1n')
      checkEqual(
        await revoke(c, workId, { fencingToken: MAX_FENCING_TOKEN }),
        true,
        'revoke with MAX_FENCING_TOKEN',
      )
      await checkRejects(() => c.backend.renew(last, LONG_TTL_MS), 'FENCED', 'renew after revoke')
    },
  },
  {
    name: 'revoke of a bad workId is INVALID_ARGUMENT before any round trip',
    unsupported: needsRevoke,
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      for (const [label, bad] of BAD_IDS) {
        const before = c.roundTrips()
        await checkRejects(
          () => (c.backend as unknown as { revoke(id: unknown): Promise<boolean> }).revoke(bad),
          'INVALID_ARGUMENT',
          `revoke of a workId ${label}`,
        )
        checkEqual(c.roundTrips(), before, `round trips of a revoke of a workId ${label}`)
      }
      // Nothing was revoked (no id was coerced or repaired into a live one), and the longest id is an id.
      await c.backend.renew(record, LONG_TTL_MS)
      checkEqual(await revoke(c, 'x'.repeat(255)), false, 'revoke of a 255-code-unit workId nobody took')
    },
  },
  {
    name: REVOKED_LISTING_CASE,
    unsupported: needsRevokeAndList,
    async run(c) {
      const record = await c.backend.acquire(`${c.prefix}revoked`, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(record, bytes('state'), LONG_TTL_MS)
      checkEqual(await revoke(c, record.workId), true, 'revoke of a live lease')
      const page = await c.backend.list!({ prefix: c.prefix })
      const [listed] = page.leases
      checkEqual(listed?.workId, record.workId, 'workId')
      checkEqual(listed?.released, false, 'released of a revoked lease')
      checkEqual(listed?.free, true, 'free of a revoked lease')
      checkEqual(listed?.holderId, '', 'holderId of a revoked lease')
      checkEqual(listed?.fencingToken, 1n, 'fencingToken of a revoked lease')
      // A revoke keeps the state for the next holder (an unclean handoff), so the listing still counts it.
      checkEqual(listed?.checkpointBytes, 5, 'checkpointBytes of a revoked lease')
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
      // Every path, not only the one that ends a lease: nothing to end is no reason for a read more.
      const released = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await c.backend.release(released)
      for (const [what, free] of [
        ['a released lease', released.workId],
        ['a revoked lease', workId],
        ['a workId never leased', c.workId('never')],
      ]) {
        const start = c.roundTrips()!
        checkEqual(await revoke(c, free!), false, `revoke of ${what}`)
        checkEqual(c.roundTrips()! - start, 1, `round trips of revoke of ${what}`)
      }
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
  {
    name: 'revoke with a fencingToken is one round trip, whether it ends the lease or not, with a live signal too',
    unsupported: needsRevokeCounted,
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      const signalledId = c.workId('signalled')
      const signalled = await c.backend.acquire(signalledId, 'holder-a', LONG_TTL_MS)
      const { signal } = new AbortController()
      await revoke(c, c.workId('warm-up'), { fencingToken: 1n })
      await revoke(c, c.workId('warm-up'), { fencingToken: 1n, signal })
      for (const [label, id, options, expected] of [
        ['a stale token', workId, { fencingToken: record.fencingToken + 1n }, false],
        ['the current token', workId, { fencingToken: record.fencingToken }, true],
        ['the token of the lease it just ended', workId, { fencingToken: record.fencingToken }, false],
        [
          'a stale token and a live signal',
          signalledId,
          { fencingToken: signalled.fencingToken + 1n, signal },
          false,
        ],
        [
          'the current token and a live signal',
          signalledId,
          { fencingToken: signalled.fencingToken, signal },
          true,
        ],
      ] as const) {
        const before = c.roundTrips()!
        checkEqual(await revoke(c, id, options), expected, `revoke with ${label}`)
        checkEqual(c.roundTrips()! - before, 1, `round trips of revoke with ${label}`)
      }
    },
  },
  {
    name: 'revoke checks options.fencingToken: not a bigint in 1n..MAX_FENCING_TOKEN is INVALID_ARGUMENT before any round trip, and changes nothing',
    unsupported: needsRevoke,
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      const throwing = {}
      Object.defineProperty(throwing, 'fencingToken', {
        get() {
          throw new Error('no token today')
        },
      })
      const bad: Array<[string, unknown]> = [
        ['the number 1', { fencingToken: 1 }],
        ["the string '1'", { fencingToken: '1' }],
        ['null', { fencingToken: null }],
        ['0n', { fencingToken: 0n }],
        ['-1n', { fencingToken: -1n }],
        ['MAX_FENCING_TOKEN + 1n', { fencingToken: MAX_FENCING_TOKEN + 1n }],
        ['2n ** 64n + 1n (1n as an unsigned 64-bit integer)', { fencingToken: 2n ** 64n + 1n }],
        ['an object that stringifies to 1', { fencingToken: { toString: () => '1', valueOf: () => 1n } }],
        ['a getter that throws', throwing],
      ]
      for (const [label, options] of bad) {
        const before = c.roundTrips()
        await checkRejects(
          () => revoke(c, workId, options),
          'INVALID_ARGUMENT',
          `revoke with fencingToken ${label}`,
        )
        checkEqual(c.roundTrips(), before, `revoke with fencingToken ${label}: round trips`)
      }
      await checkStillHeld(c, record, 'revokes with a bad fencingToken')
    },
  },
  {
    name: 'revoke reads options.fencingToken once: a token that changes after validation ends nothing it did not name',
    unsupported: needsRevoke,
    async run(c) {
      const { workId, looked, holder } = await takenOver(c)
      // Validation sees the stale token; a driver that read the option again would send the current
      // one, or none (revoke whoever holds it).
      for (const [label, later] of [
        ['the current token', holder.fencingToken],
        ['undefined', undefined],
      ] as const) {
        const { options, reads } = shiftingToken(looked.fencingToken, later)
        checkEqual(
          await revoke(c, workId, options),
          false,
          `revoke with a fencingToken read as ${looked.fencingToken}n, then as ${label}`,
        )
        checkEqual(reads(), 1, `reads of options.fencingToken (then ${label})`)
        await checkStillHeld(c, holder, `revoke with a fencingToken turning into ${label}`)
      }
      // And the other way: validation sees the current token, which the revoke must act on.
      const { options, reads } = shiftingToken(holder.fencingToken, looked.fencingToken)
      checkEqual(
        await revoke(c, workId, options),
        true,
        `revoke with a fencingToken read as ${holder.fencingToken}n, then as ${looked.fencingToken}n`,
      )
      checkEqual(reads(), 1, 'reads of options.fencingToken')
      await checkRejects(() => c.backend.renew(holder, LONG_TTL_MS), 'FENCED', 'renew after revoke')
    },
  },
]
