import { check, checkEqual, checkRejects } from '../assertions.js'
import { forge, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes } from './shared.js'

export const releaseCases: CaseDefinition[] = [
  {
    name: 'release frees the lease at once',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.release(record)
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'successor token')
    },
  },
  {
    name: 'release twice is FENCED',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await c.backend.release(record)
      await checkRejects(() => c.backend.release(record), 'FENCED', 'second release')
    },
  },
  {
    name: 'release after a takeover is FENCED and leaves the successor holding',
    async run(c) {
      const workId = c.workId()
      const old = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      const successor = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      await checkRejects(() => c.backend.release(old), 'FENCED', 'release by the old holder')
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-c', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire by a third holder',
      )
      await c.backend.renew(successor, LONG_TTL_MS)
    },
  },
  {
    name: 'release of an expired lease that nobody took succeeds and hands off cleanly',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      await c.backend.release(record)
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual((await c.backend.readCheckpoint(next)).cleanHandoff, true, 'cleanHandoff')
    },
  },
  {
    name: 'a released record can no longer renew, checkpoint or read',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await c.backend.release(record)
      await checkRejects(() => c.backend.renew(record, LONG_TTL_MS), 'FENCED', 'renew after release')
      await checkRejects(
        () => c.backend.checkpoint(record, bytes('x'), LONG_TTL_MS),
        'FENCED',
        'checkpoint after release',
      )
      await checkRejects(() => c.backend.readCheckpoint(record), 'FENCED', 'readCheckpoint after release')
    },
  },
  {
    name: 'release with a forged token or holderId is FENCED and the lease stays held',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await checkRejects(
        () => c.backend.release(forge(record, { holderId: 'intruder' })),
        'FENCED',
        'forged holderId',
      )
      await checkRejects(
        () => c.backend.release(forge(record, { fencingToken: record.fencingToken + 1n })),
        'FENCED',
        'forged token',
      )
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire after forged releases',
      )
    },
  },
  {
    name: "a record's expiresAt changed in place changes nothing a release does",
    async run(c) {
      // A record is frozen, but its Date is not: a caller can set it to anything, NaN included.
      for (const time of [Number.NaN, -8.64e15, 8.64e15]) {
        const workId = c.workId()
        const startedAt = Date.now()
        const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
        record.expiresAt.setTime(time)
        const before = c.roundTrips()
        await c.backend.release(record)
        const after = c.roundTrips()
        if (before !== undefined && after !== undefined) {
          checkEqual(after - before, 1, `round trips of a release whose record's Date reads ${time}`)
        }
        if (c.capabilities.list) {
          const [listed] = (await c.backend.list!({ prefix: workId })).leases
          const listedAt = listed?.expiresAt.getTime() ?? Number.NaN
          // Released: before now, and not the caller's time (a server's clock may be off by a minute).
          check(
            listedAt > startedAt - 60_000 && listedAt < Date.now() + 60_000,
            `listed expiresAt ${listedAt} after a release whose record's Date read ${time}`,
          )
        }
        const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
        checkEqual(
          (await c.backend.readCheckpoint(next)).cleanHandoff,
          true,
          `cleanHandoff after it (${time})`,
        )
      }
    },
  },
]
