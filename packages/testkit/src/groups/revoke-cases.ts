import type { BackendCapabilities } from '@worklease/spec'
import { check, checkBytes, checkEqual, checkRejects } from '../assertions.js'
import { type CaseContext, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes } from './shared.js'

const needsRevoke = (caps: BackendCapabilities) =>
  caps.revoke ? undefined : 'the backend cannot revoke leases (capabilities.revoke)'

function revoke(c: CaseContext, workId: string): Promise<boolean> {
  check(typeof c.backend.revoke === 'function', 'capabilities.revoke is true but backend.revoke is missing')
  return c.backend.revoke(workId)
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
]
