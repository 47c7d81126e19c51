import { type LeaseHeldError, MAX_FENCING_TOKEN } from '@worklease/spec'
import { checkBytes, checkEqual, checkRejects, rejection } from '../assertions.js'
import { forge, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition, SupportContext } from '../suite-case.js'
import { bytes, takeWays } from './shared.js'

const CYCLES = 200

const needsSeed = (_caps: unknown, { seedsTokens }: SupportContext) =>
  seedsTokens ? undefined : 'the harness cannot seed a token (no seedToken())'

const YEAR_MS = 365 * 24 * 3_600_000

const needsManualClock = (caps: { clock: string }) =>
  caps.clock === 'server' ? 'a year can pass only on a client clock the suite moves' : undefined

export const tokenCases: CaseDefinition[] = [
  {
    name: `tokens go up by one over ${CYCLES} acquire/release cycles`,
    timeoutMs: 60_000,
    async run(c) {
      const workId = c.workId()
      for (let i = 1; i <= CYCLES; i++) {
        const record = await c.backend.acquire(workId, `holder-${i % 3}`, LONG_TTL_MS)
        checkEqual(record.fencingToken, BigInt(i), `token of cycle ${i}`)
        await c.backend.release(record)
      }
    },
  },
  {
    name: 'tokens keep rising across expiries, releases, renewals and checkpoints',
    timeoutMs: 30_000,
    async run(c) {
      const workId = c.workId()
      let expected = 0n
      for (let i = 0; i < 4; i++) {
        const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
        expected++
        checkEqual(record.fencingToken, expected, `token after ${i} expiries`)
        await c.backend.renew(record, SHORT_TTL_MS)
        await c.backend.checkpoint(record, bytes(`round ${i}`), SHORT_TTL_MS)
        if (i % 2 === 0) await c.backend.release(record)
        else await c.expire()
      }
    },
  },
  {
    // A row swept once long expired (a TTL index on expiresAt, a TTL attribute, a cleanup job)
    // starts its tokens again at 1, beside a stale holder's, and loses its state and handoff.
    name: 'a lease free for a year keeps its next token, its state and its handoff',
    unsupported: needsManualClock,
    async run(c) {
      const ended = [
        { workId: c.workId('released'), state: 'released state', cleanHandoff: true },
        { workId: c.workId('expired'), state: 'expired state', cleanHandoff: false },
      ]
      for (const { workId, state, cleanHandoff } of ended) {
        const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
        await c.backend.checkpoint(record, bytes(state), SHORT_TTL_MS)
        if (cleanHandoff) await c.backend.release(record)
      }
      await c.elapse(YEAR_MS)
      for (const { workId, state, cleanHandoff } of ended) {
        const next = await c.backend.acquire(workId, 'holder-b', SHORT_TTL_MS)
        checkEqual(next.fencingToken, 2n, `token of ${workId} a year later`)
        const read = await c.backend.readCheckpoint(next)
        checkBytes(read.state, bytes(state), `state of ${workId} a year later`)
        checkEqual(read.cleanHandoff, cleanHandoff, `cleanHandoff of ${workId} a year later`)
      }
    },
  },
  {
    name: 'failed acquires never consume a token',
    async run(c) {
      const workId = c.workId()
      const held = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      for (let i = 0; i < 10; i++) {
        await checkRejects(
          () => c.backend.acquire(workId, `holder-${i}`, LONG_TTL_MS),
          'LEASE_HELD',
          `acquire ${i}`,
        )
      }
      await c.backend.release(held)
      checkEqual((await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)).fencingToken, 2n, 'next token')
    },
  },
  {
    name: 'tokens are per workId',
    async run(c) {
      const busy = c.workId('busy')
      for (let i = 0; i < 5; i++)
        await c.backend.release(await c.backend.acquire(busy, 'holder-a', LONG_TTL_MS))
      const fresh = await c.backend.acquire(c.workId('fresh'), 'holder-a', LONG_TTL_MS)
      checkEqual(fresh.fencingToken, 1n, 'first token of another workId')
    },
  },
  {
    name: 'a backend opened later (a restart) continues the sequence',
    async run(c) {
      const workId = c.workId()
      for (let i = 0; i < 3; i++)
        await c.backend.release(await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS))
      const restarted = await c.open()
      checkEqual(
        (await restarted.acquire(workId, 'holder-a', LONG_TTL_MS)).fencingToken,
        4n,
        'token after restart',
      )
    },
  },
  {
    name: 'a seeded token is continued: the next acquire gets it + 1 with a clean handoff',
    unsupported: needsSeed,
    async run(c) {
      const workId = c.workId()
      await c.seedToken(workId, 41n)
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      checkEqual(record.fencingToken, 42n, 'token after the seed')
      checkEqual((await c.backend.readCheckpoint(record)).cleanHandoff, true, 'cleanHandoff')
    },
  },
  {
    name: 'the largest token is handed out once, then acquire is TOKENS_EXHAUSTED and changes nothing',
    unsupported: needsSeed,
    async run(c) {
      const workId = c.workId()
      await c.seedToken(workId, MAX_FENCING_TOKEN - 1n)
      const last = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      checkEqual(last.fencingToken, MAX_FENCING_TOKEN, 'the largest token')
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire while the last token is held',
      )
      await c.backend.checkpoint(last, bytes('at the ceiling'), LONG_TTL_MS)
      await c.backend.renew(last, LONG_TTL_MS)
      await c.backend.release(last)
      for (const attempt of [1, 2]) {
        await checkRejects(
          () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
          'TOKENS_EXHAUSTED',
          `acquire past the largest token (attempt ${attempt})`,
        )
      }
      await checkRejects(() => c.backend.renew(last, LONG_TTL_MS), 'FENCED', 'renew after release')
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-a', LONG_TTL_MS),
        'TOKENS_EXHAUSTED',
        'acquire by the last holder',
      )
    },
  },
  {
    name: 'an expired lease at the largest token is TOKENS_EXHAUSTED, and its state stays readable',
    unsupported: needsSeed,
    async run(c) {
      const workId = c.workId()
      await c.seedToken(workId, MAX_FENCING_TOKEN - 1n)
      const last = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(last, bytes('final'), SHORT_TTL_MS)
      await c.expire()
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'TOKENS_EXHAUSTED',
        'acquire of the expired last lease',
      )
      checkBytes((await c.backend.readCheckpoint(last)).state, bytes('final'), 'state of the last lease')
    },
  },
  {
    name: "tokens where doubles stop being exact (2^53 - 1, 2^53, 2^53 + 1) are kept exactly on every call, renewMany's refusals too",
    unsupported: needsSeed,
    async run(c) {
      // A client that decodes int64s as numbers where they fit (js-bson, JSON) hands back 2^53 as a
      // number that is no safe integer, and 2^53 + 1 as 2^53.
      const released = await c.backend.acquire(c.workId('released'), 'holder-a', LONG_TTL_MS)
      await c.backend.release(released)
      for (const [take, takeLease] of takeWays(c))
        for (const token of [2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n]) {
          const workId = c.workId()
          await c.seedToken(workId, token - 1n)
          const record = await takeLease(c.backend, workId, 'holder-a', LONG_TTL_MS)
          checkEqual(record.fencingToken, token, `token ${take} took after the seed`)
          if (c.capabilities.reportsHolder) {
            const refused = await rejection(
              () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
              `acquire of the lease at ${token}`,
            )
            checkEqual(
              (refused as LeaseHeldError).holder?.fencingToken,
              token,
              `LEASE_HELD's holder at ${token}`,
            )
          }
          await c.backend.renew(record, LONG_TTL_MS)
          await c.backend.checkpoint(record, bytes(`at ${token}`), LONG_TTL_MS)
          checkBytes(
            (await c.backend.readCheckpoint(record)).state,
            bytes(`at ${token}`),
            `state at ${token}`,
          )
          if (c.capabilities.renewMany) {
            // The refused record makes the backend look at every record's token again.
            checkEqual(
              JSON.stringify(await c.backend.renewMany!([record, released], LONG_TTL_MS)),
              '["renewed","fenced"]',
              `renewMany at ${token} beside a released record`,
            )
          }
          if (c.capabilities.list) {
            const page = await c.backend.list!({ prefix: workId })
            const listed = page.leases.find((lease) => lease.workId === workId)
            checkEqual(listed?.fencingToken, token, `listed token at ${token}`)
          }
          for (const forged of [token - 1n, token + 1n]) {
            await checkRejects(
              () => c.backend.renew(forge(record, { fencingToken: forged }), LONG_TTL_MS),
              'FENCED',
              `renew with ${forged} while ${token} holds`,
            )
          }
          await c.backend.release(record)
        }
    },
  },
  {
    name: 'tokens compare exactly near the largest: one the same as a double is FENCED on every call',
    unsupported: needsSeed,
    async run(c) {
      // A token compared as a double (a Lua number, a JSON number, a float column) matches its
      // neighbours up here: 2^63 - 1, 2^63 - 2 and 2^63 - 3 are one double.
      for (const [seed, forged] of [
        [MAX_FENCING_TOKEN - 2n, MAX_FENCING_TOKEN],
        [MAX_FENCING_TOKEN - 1n, MAX_FENCING_TOKEN - 2n],
      ] as const) {
        const workId = c.workId()
        await c.seedToken(workId, seed)
        const real = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
        const fake = forge(real, { fencingToken: forged })
        await checkRejects(() => c.backend.renew(fake, LONG_TTL_MS), 'FENCED', `renew with ${forged}`)
        await checkRejects(
          () => c.backend.checkpoint(fake, bytes('x'), LONG_TTL_MS),
          'FENCED',
          `checkpoint with ${forged}`,
        )
        await checkRejects(() => c.backend.readCheckpoint(fake), 'FENCED', `readCheckpoint with ${forged}`)
        if (c.capabilities.renewMany) {
          checkEqual(
            JSON.stringify(await c.backend.renewMany!([fake], LONG_TTL_MS)),
            '["fenced"]',
            `renewMany with ${forged}`,
          )
        }
        await checkRejects(() => c.backend.release(fake), 'FENCED', `release with ${forged}`)
        await checkRejects(
          () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
          'LEASE_HELD',
          `acquire after the forged calls (token ${real.fencingToken} still held)`,
        )
      }
    },
  },
]
