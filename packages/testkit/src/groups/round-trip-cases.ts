import { check, checkEqual } from '../assertions.js'
import { type CaseContext, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes } from './shared.js'

// A failure may take one more read to pick the right error (FENCED or LEASE_EXPIRED), never more.
const MAX_ON_FAILURE = 2

const needsCounter = (_caps: unknown, { countsRoundTrips }: { countsRoundTrips: boolean }) =>
  countsRoundTrips ? undefined : 'the harness does not count round trips (no roundTrips())'

async function counted(c: CaseContext, action: () => Promise<unknown>): Promise<number> {
  const before = c.roundTrips()!
  await action().catch(() => undefined)
  return c.roundTrips()! - before
}

export const roundTripCases: CaseDefinition[] = [
  {
    name: 'every operation is one round trip on its happy path',
    unsupported: needsCounter,
    async run(c) {
      const workId = c.workId()
      const acquireTrips = c.harness.acquireRoundTrips ?? 1
      let record = await c.backend.acquire(c.workId('warm-up'), 'holder-a', LONG_TTL_MS)
      await c.backend.release(record)
      checkEqual(
        await counted(c, async () => (record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS))),
        acquireTrips,
        'acquire of a new workId',
      )
      checkEqual(await counted(c, () => c.backend.renew(record, LONG_TTL_MS)), 1, 'renew')
      checkEqual(
        await counted(c, () => c.backend.checkpoint(record, bytes('s'), LONG_TTL_MS)),
        1,
        'checkpoint',
      )
      checkEqual(await counted(c, () => c.backend.readCheckpoint(record)), 1, 'readCheckpoint')
      checkEqual(await counted(c, () => c.backend.release(record)), 1, 'release')
      checkEqual(
        await counted(c, async () => (record = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS))),
        acquireTrips,
        'acquire of a released lease',
      )
    },
  },
  {
    name: `failures take at most ${MAX_ON_FAILURE} round trips`,
    unsupported: needsCounter,
    async run(c) {
      const workId = c.workId()
      const old = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      const expiredAlone = await c.backend.acquire(c.workId('alone'), 'holder-a', SHORT_TTL_MS)
      await c.expire()
      const held = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      await c.backend.checkpoint(held, bytes('later'), LONG_TTL_MS, { sequence: 10 })
      const failures: Array<[string, () => Promise<unknown>]> = [
        ['acquire of a held lease', () => c.backend.acquire(workId, 'holder-c', LONG_TTL_MS)],
        ...(c.capabilities.acquireWithCheckpoint
          ? [
              [
                'acquireWithCheckpoint of a held lease',
                () => c.backend.acquireWithCheckpoint!(workId, 'holder-c', LONG_TTL_MS),
              ] as [string, () => Promise<unknown>],
            ]
          : []),
        ['renew after takeover', () => c.backend.renew(old, LONG_TTL_MS)],
        ['renew after expiry', () => c.backend.renew(expiredAlone, LONG_TTL_MS)],
        ['checkpoint after takeover', () => c.backend.checkpoint(old, bytes('x'), LONG_TTL_MS)],
        // Not failures, but not the one write that lands either: each may take the one more.
        [
          'checkpoint with a sequence below the stored one',
          () => c.backend.checkpoint(held, bytes('earlier'), LONG_TTL_MS, { sequence: 5 }),
        ],
        [
          'checkpoint of an expired lease nobody took',
          () => c.backend.checkpoint(expiredAlone, bytes('x'), LONG_TTL_MS),
        ],
        ['release after takeover', () => c.backend.release(old)],
        ['readCheckpoint after takeover', () => c.backend.readCheckpoint(old)],
      ]
      for (const [what, action] of failures) {
        const trips = await counted(c, action)
        check(
          trips >= 1 && trips <= MAX_ON_FAILURE,
          `${what}: ${trips} round trips, expected 1..${MAX_ON_FAILURE}`,
        )
      }
      await c.backend.renew(held, LONG_TTL_MS)
    },
  },
]
