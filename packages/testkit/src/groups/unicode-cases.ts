import { checkBytes, checkEqual, checkRejects } from '../assertions.js'
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
    name: 'holderIds that differ only by case or trailing space are different holders',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'Holder', LONG_TTL_MS)
      for (const impostor of ['holder', 'HOLDER', 'Holder ']) {
        await checkRejects(
          () => c.backend.renew({ ...record, holderId: impostor }, LONG_TTL_MS),
          'FENCED',
          impostor,
        )
      }
    },
  },
]
