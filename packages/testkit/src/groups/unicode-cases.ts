import { compareWorkIds, isLeaseHeldError } from '@worklease/spec'
import { check, checkBytes, checkEqual, checkRejects, outcome, rejection, show } from '../assertions.js'
import { LONG_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes } from './shared.js'

const TRICKY_IDS: readonly string[] = [
  'emoji 🚀🔒 and flags 🇫🇮',
  'CJK 作業リース',
  'RTL עבודה',
  'combining e\u0301 vs \u00e9',
  'quote \' double " backtick `',
  'backslash \\ and \\0 and \\n',
  'percent % underscore _ star *',
  'SELECT * FROM leases; DROP TABLE leases; --',
  '$where {"$gt": ""}',
  '#{attr} :value',
  'trailing space ',
  'tab\tnewline\nreturn\r',
]

/** `unique` padded with `filler` to exactly 255 UTF-16 code units without splitting a surrogate pair. */
function longest(unique: string, filler: string): string {
  let id = unique
  while (id.length + filler.length <= 255) id += filler
  return id.padEnd(255, 'x')
}

export const unicodeCases: CaseDefinition[] = [
  {
    name: 'ids with emoji, quotes, backslashes, wildcards and SQL/NoSQL syntax round-trip exactly',
    async run(c) {
      const ids = [
        ...TRICKY_IDS.map((raw) => `${raw} ${c.workId()}`),
        longest(c.workId(), '🚀'),
        longest(c.workId(), 'z'),
      ]
      for (const [i, workId] of ids.entries()) {
        const holderId = i < TRICKY_IDS.length ? `holder ${TRICKY_IDS[i]}` : longest('holder', '🔒')
        const record = await c.backend.acquire(workId, holderId, LONG_TTL_MS)
        checkEqual(record.workId, workId, `workId ${i}`)
        checkEqual(record.holderId, holderId, `holderId ${i}`)
        await c.backend.checkpoint(record, bytes(workId), LONG_TTL_MS)
        checkBytes((await c.backend.readCheckpoint(record)).state, bytes(workId), `state of id ${i}`)
        await c.backend.renew(record, LONG_TTL_MS)
        await c.backend.release(record)
      }
    },
  },
  {
    name: 'ids that differ only by case, trailing space or normalization are different leases',
    async run(c) {
      const base = c.workId('Mixed')
      const variants = [
        base,
        base.toUpperCase(),
        base.toLowerCase(),
        `${base} `,
        `${base}e\u0301`,
        `${base}\u00e9`,
      ]
      for (const workId of variants) {
        const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
        checkEqual(record.fencingToken, 1n, `first token of ${JSON.stringify(workId)}`)
      }
      await checkRejects(() => c.backend.acquire(base, 'holder-b', LONG_TTL_MS), 'LEASE_HELD', 'the base id')
    },
  },
  {
    // A store comparing loosely in one statement only (a collation on one query, PAD SPACE in one
    // index) passes the case above and mixes lookalikes up there: revoke, a prefix, a cursor, the
    // checkpoint of another id, or the holder a refusal names.
    name: 'every operation tells lookalike ids apart: revoke, checkpoints, a refusal, list by prefix and page by page',
    async run(c) {
      const base = c.workId('Alike')
      const variants = [
        base,
        base.toUpperCase(),
        base.toLowerCase(),
        `${base} `,
        `${base}  `,
        `${base}e\u0301`,
        `${base}\u00e9`,
      ]
      const records = []
      for (const [i, workId] of variants.entries()) {
        const record = await c.backend.acquire(workId, `holder-${i}`, LONG_TTL_MS)
        await c.backend.checkpoint(record, bytes(`state ${i}`), LONG_TTL_MS)
        records.push(record)
      }
      for (const [i, record] of records.entries()) {
        checkBytes(
          (await c.backend.readCheckpoint(record)).state,
          bytes(`state ${i}`),
          `state of ${JSON.stringify(record.workId)}`,
        )
        const what = `acquire of ${JSON.stringify(record.workId)} while held`
        await checkRejects(
          () => c.backend.acquire(record.workId, 'holder-z', LONG_TTL_MS),
          'LEASE_HELD',
          what,
        )
        if (c.capabilities.reportsHolder) {
          const refused = await c.backend
            .acquire(record.workId, 'holder-z', LONG_TTL_MS)
            .catch((error: unknown) => error)
          const holder = (refused as { holder?: { holderId?: unknown } }).holder?.holderId
          checkEqual(
            holder,
            `holder-${i}`,
            `the holder LEASE_HELD names for ${JSON.stringify(record.workId)}`,
          )
        }
      }
      if (c.capabilities.list) {
        const sorted = [...variants].sort(compareWorkIds).filter((id) => id.startsWith(base))
        const listed: string[] = []
        let cursor: string | undefined
        for (let pages = 0; pages < 20; pages++) {
          const page = await c.backend.list!({
            prefix: base,
            limit: 1,
            ...(cursor === undefined ? {} : { cursor }),
          })
          listed.push(...page.leases.map((lease) => lease.workId))
          cursor = page.cursor
          if (cursor === undefined) break
        }
        checkEqual(show(listed), show(sorted), `the ids listed under ${JSON.stringify(base)}, one a page`)
      }
      if (c.capabilities.revoke) {
        // The upper-case id and the one with a trailing space: each ends its own lease, no other.
        for (const revoked of [1, 3]) {
          checkEqual(
            await c.backend.revoke!(variants[revoked]!),
            true,
            `revoke of ${JSON.stringify(variants[revoked])}`,
          )
        }
        for (const [i, record] of records.entries()) {
          const renewed = await outcome(() => c.backend.renew(record, LONG_TTL_MS))
          const expected = i === 1 || i === 3 ? 'FENCED' : 'ok'
          checkEqual(renewed, expected, `renew of ${JSON.stringify(record.workId)} after those revokes`)
        }
      }
    },
  },
  {
    name: 'holderIds that differ only by case, trailing space or normalization are different holders, in every operation',
    async run(c) {
      // A collation that folds case or pads spaces (MySQL's PAD SPACE, a case-insensitive default) in
      // one statement and not another lets a forged record renew, release or read a lease it never held.
      const workId = c.workId()
      const holder = 'H\u00f6lder'
      const record = await c.backend.acquire(workId, holder, LONG_TTL_MS)
      await c.backend.checkpoint(record, bytes('the holder'), LONG_TTL_MS)
      for (const impostor of ['h\u00f6lder', 'H\u00d6LDER', 'H\u00f6lder ', 'Ho\u0308lder']) {
        const forged = { ...record, holderId: impostor }
        const what = (op: string) => `${op} as ${show(impostor)}`
        await checkRejects(() => c.backend.renew(forged, LONG_TTL_MS), 'FENCED', what('renew'))
        await checkRejects(
          () => c.backend.checkpoint(forged, bytes('an impostor'), LONG_TTL_MS),
          'FENCED',
          what('checkpoint'),
        )
        await checkRejects(() => c.backend.readCheckpoint(forged), 'FENCED', what('readCheckpoint'))
        await checkRejects(() => c.backend.release(forged), 'FENCED', what('release'))
        if (c.capabilities.renewMany) {
          checkEqual((await c.backend.renewMany!([forged], LONG_TTL_MS)).join(), 'fenced', what('renewMany'))
        }
      }
      await c.backend.renew(record, LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('the holder'), 'the state, untouched')
      const refusal = await rejection(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'another acquire',
      )
      check(isLeaseHeldError(refusal), `another acquire: expected LEASE_HELD, got ${show(refusal)}`)
      if (c.capabilities.reportsHolder)
        checkEqual(refusal.holder?.holderId, holder, 'the holder LEASE_HELD names')
    },
  },
]
