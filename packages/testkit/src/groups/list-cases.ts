import { getEventListeners } from 'node:events'
import type { BackendCapabilities, LeaseListing, LeasePage, ListOptions } from '@worklease/spec'
import { isWorkleaseError } from '@worklease/spec'
import { check, checkEqual, rejection, show } from '../assertions.js'
import { type CaseContext, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { BAD_IDS, bytes } from './shared.js'

const needsList = (caps: BackendCapabilities) =>
  caps.list ? undefined : 'the backend does not list leases (capabilities.list)'

function list(c: CaseContext, options?: ListOptions): Promise<LeasePage> {
  check(typeof c.backend.list === 'function', 'capabilities.list is true but backend.list is missing')
  return c.backend.list(options)
}

/** Every page under `prefix`, `limit` at a time, with a guard against a cursor that never ends. */
async function listAll(c: CaseContext, prefix: string, limit = 1_000): Promise<LeaseListing[]> {
  const all: LeaseListing[] = []
  let cursor: string | undefined
  for (let pages = 0; pages < 1_000; pages++) {
    const page = await list(c, { prefix, limit, ...(cursor === undefined ? {} : { cursor }) })
    check(page.leases.length <= limit, `a page of ${page.leases.length} leases exceeds limit ${limit}`)
    all.push(...page.leases)
    cursor = page.cursor
    if (cursor === undefined) return all
    check(page.leases.length > 0, 'an empty page with a cursor')
  }
  throw new Error('list never reached its last page')
}

const ids = (leases: readonly LeaseListing[]) => leases.map((lease) => lease.workId)

function checkIds(actual: readonly LeaseListing[], expected: readonly string[], what: string): void {
  const got = ids(actual)
  check(
    got.length === expected.length && got.every((id, i) => id === expected[i]),
    `${what}: expected ${show(expected)}, got ${show(got)}`,
  )
}

export const listCases: CaseDefinition[] = [
  {
    name: 'list shows each lease as it is: holder, token, expiry, released, free, checkpoint size',
    unsupported: needsList,
    async run(c) {
      const held = await c.backend.acquire(`${c.prefix}held`, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(held, bytes('12345'), LONG_TTL_MS)
      // An empty state is a state stored: 0 bytes, not none.
      const empty = await c.backend.acquire(`${c.prefix}held-empty`, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(empty, new Uint8Array(0), LONG_TTL_MS)
      const released = await c.backend.acquire(`${c.prefix}released`, 'holder-b', LONG_TTL_MS)
      await c.backend.release(released)
      await c.backend.acquire(`${c.prefix}expired`, 'holder-c', SHORT_TTL_MS)
      await c.expire()
      const page = await list(c, { prefix: c.prefix })
      check(page.now instanceof Date && !Number.isNaN(page.now.getTime()), 'page.now must be a valid Date')
      checkEqual(page.cursor, undefined, 'cursor of the only page')
      checkIds(
        page.leases,
        [`${c.prefix}expired`, `${c.prefix}held`, `${c.prefix}held-empty`, `${c.prefix}released`],
        'workIds',
      )
      const [expired, h, e, r] = page.leases as [LeaseListing, LeaseListing, LeaseListing, LeaseListing]
      checkEqual(e.checkpointBytes, 0, 'held-empty.checkpointBytes')
      for (const lease of page.leases) {
        checkEqual(
          lease.free,
          lease.released || lease.expiresAt.getTime() <= page.now.getTime(),
          `${lease.workId}: free is released, or expiresAt <= page.now`,
        )
      }
      // On a client clock the listing shows the expiry the record has, to the millisecond.
      if (c.clientClock) checkEqual(h.expiresAt.getTime(), held.expiresAt.getTime(), 'held.expiresAt')
      checkEqual(h.holderId, 'holder-a', 'held.holderId')
      checkEqual(h.fencingToken, 1n, 'held.fencingToken')
      checkEqual(h.released, false, 'held.released')
      checkEqual(h.free, false, 'held.free')
      checkEqual(h.checkpointBytes, 5, 'held.checkpointBytes')
      check(h.expiresAt.getTime() > page.now.getTime(), 'a held lease expires after page.now')
      checkEqual(r.released, true, 'released.released')
      checkEqual(r.free, true, 'released.free')
      checkEqual(r.checkpointBytes, null, 'released.checkpointBytes')
      check(
        r.expiresAt.getTime() <= page.now.getTime(),
        `a released lease expired by page.now (release moves the expiry into the past), got ${r.expiresAt.toISOString()} against ${page.now.toISOString()}`,
      )
      checkEqual(expired.released, false, 'expired.released')
      checkEqual(expired.free, true, 'expired.free')
      check(expired.expiresAt.getTime() <= page.now.getTime(), 'an expired lease expired by page.now')
      if (c.clientClock) checkEqual(page.now.getTime(), c.clock.now(), 'page.now on a client clock')
    },
  },
  {
    name: "list shows the size of the state a lease took over, before the new holder's first checkpoint",
    unsupported: needsList,
    async run(c) {
      // The state is the workId's, not the tenure's: a size kept per tenure reads "never checkpointed"
      // of a successor that has the previous holder's bytes to resume from.
      const workId = `${c.prefix}handed-over`
      const first = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(first, bytes('abc'), LONG_TTL_MS)
      await c.backend.release(first)
      await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      const [listed] = (await list(c, { prefix: workId })).leases
      checkEqual(listed?.holderId, 'holder-b', 'holderId')
      checkEqual(
        listed?.checkpointBytes,
        3,
        'checkpointBytes after a release, before any checkpoint of the successor',
      )
    },
  },
  {
    // checkpointBytes is the size of the last state stored, for as long as it is kept: a lease that
    // ended (released, expired) keeps its state for the next holder, and the listing still counts it.
    name: 'an ended lease is listed with the size of the state it kept: released and expired leases',
    unsupported: needsList,
    async run(c) {
      const released = await c.backend.acquire(`${c.prefix}released`, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(released, bytes('abc'), LONG_TTL_MS)
      await c.backend.release(released)
      const expired = await c.backend.acquire(`${c.prefix}expired`, 'holder-b', SHORT_TTL_MS)
      await c.backend.checkpoint(expired, bytes('12345'), SHORT_TTL_MS)
      await c.expire()
      const [e, r] = (await list(c, { prefix: c.prefix })).leases
      checkEqual(e?.workId, expired.workId, 'workId of the expired lease')
      checkEqual(e?.free, true, 'free of the expired lease')
      checkEqual(e?.checkpointBytes, 5, 'checkpointBytes of an expired lease')
      checkEqual(r?.workId, released.workId, 'workId of the released lease')
      checkEqual(r?.released, true, 'released of the released lease')
      checkEqual(r?.checkpointBytes, 3, 'checkpointBytes of a released lease')
    },
  },
  {
    name: 'release never moves the expiry later: a lease released after it expired keeps its expiry',
    unsupported: needsList,
    async run(c) {
      // A holder whose release comes late (a pause, a clock ahead) must not make its ended lease look
      // as if it ran on until the release.
      const record = await c.backend.acquire(`${c.prefix}late`, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      if (c.clientClock) await c.elapse(LONG_TTL_MS)
      await c.backend.release(record)
      const [listed] = (await list(c, { prefix: c.prefix })).leases
      checkEqual(listed?.released, true, 'released')
      check(
        listed!.expiresAt.getTime() <= record.expiresAt.getTime(),
        `the expiry moved from ${record.expiresAt.toISOString()} to ${listed!.expiresAt.toISOString()}`,
      )
    },
  },
  {
    name: 'list matches the prefix literally: wildcards of LIKE, glob and regular expressions are characters',
    unsupported: needsList,
    async run(c) {
      const suffixes = ['a%b', 'a_b', 'axb', 'a*b', 'a[b]', 'a.b', 'a\\b', 'a(b)', 'a^b', 'a$b', 'a?b', 'a|b']
      for (const suffix of suffixes) await c.backend.acquire(`${c.prefix}${suffix}`, 'holder-a', LONG_TTL_MS)
      for (const suffix of suffixes) {
        const wanted = `${c.prefix}${suffix}`
        checkIds(await listAll(c, wanted), [wanted], `list with prefix ${show(wanted)}`)
      }
      checkIds(await listAll(c, `${c.prefix}a%`), [`${c.prefix}a%b`], 'prefix ending in %')
      checkIds(await listAll(c, `${c.prefix}a_`), [`${c.prefix}a_b`], 'prefix ending in _')
    },
  },
  {
    // A driver validating one read of an option and querying with another lists what the check
    // refused: a prefix answering '' the second time shows every other tenant's leases.
    name: 'list reads its options once: a prefix, cursor or limit answering otherwise later changes nothing',
    unsupported: needsList,
    async run(c) {
      const p = c.prefix
      for (const id of [`${p}a/1`, `${p}a/2`, `${p}a/3`, `${p}b/1`]) {
        await c.backend.acquire(id, 'holder-a', LONG_TTL_MS)
      }
      const shifting = (fields: Record<string, [unknown, unknown]>) => {
        const reads = new Map<string, number>()
        const options = {}
        for (const [name, [first, later]] of Object.entries(fields)) {
          Object.defineProperty(options, name, {
            enumerable: true,
            get: () => {
              reads.set(name, (reads.get(name) ?? 0) + 1)
              return reads.get(name) === 1 ? first : later
            },
          })
        }
        return options as ListOptions
      }
      const byPrefix = await list(c, shifting({ prefix: [`${p}a/`, p] }))
      checkIds(
        byPrefix.leases,
        [`${p}a/1`, `${p}a/2`, `${p}a/3`],
        'a prefix that answers the whole group later',
      )
      const byLimit = await list(c, shifting({ prefix: [`${p}a/`, `${p}a/`], limit: [1, 1_000] }))
      checkIds(byLimit.leases, [`${p}a/1`], 'a limit that answers 1000 later')
      const byCursor = await list(
        c,
        shifting({ prefix: [`${p}a/`, `${p}a/`], cursor: [`${p}a/2`, `${p}a/`] }),
      )
      checkIds(byCursor.leases, [`${p}a/3`], 'a cursor that answers the prefix later')
    },
  },
  {
    name: 'list includes the prefix itself and ids it is a prefix of, and nothing before or after',
    unsupported: needsList,
    async run(c) {
      const p = c.prefix
      const all = [
        `${p}job`,
        `${p}job-1`,
        `${p}job-10`,
        `${p}job-1/x`,
        `${p}job-2`,
        `${p}jo`,
        `${p}jobz`,
        `${p}k`,
      ]
      for (const id of all) await c.backend.acquire(id, 'holder-a', LONG_TTL_MS)
      checkIds(await listAll(c, `${p}job-1`), [`${p}job-1`, `${p}job-1/x`, `${p}job-10`], 'prefix job-1')
      checkIds(
        await listAll(c, `${p}job`),
        [`${p}job`, `${p}job-1`, `${p}job-1/x`, `${p}job-10`, `${p}job-2`, `${p}jobz`],
        'prefix job',
      )
    },
  },
  {
    name: 'list orders workIds by code point (UTF-8 byte order), astral characters last',
    unsupported: needsList,
    async run(c) {
      // By UTF-16 code units the emoji (U+1F600, stored as D83D DE00) would sort before U+FFFD.
      const suffixes = ['\u{1F600}', '\uFFFD', 'é', 'z', 'A', 'a', '\u{10FFFF}', '日本']
      for (const suffix of suffixes) await c.backend.acquire(`${c.prefix}${suffix}`, 'holder-a', LONG_TTL_MS)
      const expected = ['A', 'a', 'z', 'é', '日本', '\uFFFD', '\u{1F600}', '\u{10FFFF}'].map(
        (s) => `${c.prefix}${s}`,
      )
      checkIds(await listAll(c, c.prefix), expected, 'one page')
      checkIds(await listAll(c, c.prefix, 3), expected, 'pages of 3')
      checkIds(await listAll(c, `${c.prefix}\u{1F600}`), [`${c.prefix}\u{1F600}`], 'astral prefix')
    },
  },
  {
    name: 'pages cut anywhere, even between ids that share a prefix, without repeats or gaps',
    unsupported: needsList,
    timeoutMs: 60_000,
    async run(c) {
      const expected: string[] = []
      for (const stem of ['p', 'p/', 'p/a', 'p/a/', 'p/a/b', 'p/b', 'q']) expected.push(`${c.prefix}${stem}`)
      for (const id of expected) await c.backend.acquire(id, 'holder-a', LONG_TTL_MS)
      for (const limit of [1, 2, 3, 6, 7, 8])
        checkIds(await listAll(c, c.prefix, limit), expected, `limit ${limit}`)
    },
  },
  {
    name: 'leases that change between pages are seen as they are, none skipped or repeated',
    unsupported: needsList,
    async run(c) {
      const p = c.prefix
      const records = new Map<string, Awaited<ReturnType<typeof c.backend.acquire>>>()
      for (const id of ['a', 'b', 'c', 'd'])
        records.set(id, await c.backend.acquire(`${p}${id}`, 'holder-a', LONG_TTL_MS))
      const first = await list(c, { prefix: p, limit: 2 })
      checkIds(first.leases, [`${p}a`, `${p}b`], 'first page')
      check(first.cursor !== undefined, 'a cursor after the first of two pages')
      await c.backend.acquire(`${p}a0`, 'holder-b', LONG_TTL_MS) // before the cursor: not on a later page
      await c.backend.acquire(`${p}c0`, 'holder-b', LONG_TTL_MS) // after it: on the next page
      await c.backend.release(records.get('d')!)
      const second = await list(c, { prefix: p, limit: 10, cursor: first.cursor })
      checkIds(second.leases, [`${p}c`, `${p}c0`, `${p}d`], 'second page')
      checkEqual(second.leases[2]!.released, true, 'd released between pages')
      checkEqual(second.cursor, undefined, 'cursor of the last page')
    },
  },
  {
    name: 'a full last page has no cursor: the page that ends the listing says so even at limit',
    unsupported: needsList,
    async run(c) {
      for (const id of ['a', 'b', 'c']) await c.backend.acquire(`${c.prefix}${id}`, 'holder-a', LONG_TTL_MS)
      const full = await list(c, { prefix: c.prefix, limit: 3 })
      checkIds(
        full.leases,
        [`${c.prefix}a`, `${c.prefix}b`, `${c.prefix}c`],
        'a page of exactly limit leases',
      )
      checkEqual(full.cursor, undefined, 'cursor of a last page holding exactly limit leases')
      const first = await list(c, { prefix: c.prefix, limit: 2 })
      check(first.cursor !== undefined, 'a cursor after the first of two pages')
      const last = await list(c, { prefix: c.prefix, limit: 1, cursor: first.cursor })
      checkIds(last.leases, [`${c.prefix}c`], 'a last page of one')
      checkEqual(last.cursor, undefined, 'cursor of a last page of one at limit 1')
    },
  },
  {
    name: 'list pages 100 leases when no limit is given',
    unsupported: needsList,
    timeoutMs: 120_000,
    async run(c) {
      const expected: string[] = []
      for (let i = 0; i < 101; i++) expected.push(`${c.prefix}${String(i).padStart(3, '0')}`)
      for (const id of expected) await c.backend.acquire(id, 'holder-a', LONG_TTL_MS)
      const first = await list(c, { prefix: c.prefix })
      checkIds(first.leases, expected.slice(0, 100), 'the first page without a limit')
      check(first.cursor !== undefined, 'a cursor after the first 100 of 101 leases')
      const second = await list(c, { prefix: c.prefix, cursor: first.cursor })
      checkIds(second.leases, expected.slice(100), 'the second page without a limit')
      checkEqual(second.cursor, undefined, 'cursor of the last page')
    },
  },
  {
    name: 'list changes no lease: an expired lease it listed is still an unclean handoff at its token',
    unsupported: needsList,
    async run(c) {
      const workId = `${c.prefix}expired`
      const crashed = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(crashed, bytes('half done'), SHORT_TTL_MS)
      await c.expire()
      for (let i = 0; i < 2; i++) {
        const [listed] = (await list(c, { prefix: c.prefix })).leases
        checkEqual(listed?.workId, workId, `listing ${i + 1}: workId`)
        checkEqual(listed?.released, false, `listing ${i + 1}: an expired lease is not released`)
        checkEqual(listed?.free, true, `listing ${i + 1}: free`)
        checkEqual(listed?.fencingToken, 1n, `listing ${i + 1}: fencingToken`)
      }
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'token of the successor after listings')
      const read = await c.backend.readCheckpoint(next)
      checkEqual(read.cleanHandoff, false, 'cleanHandoff after a crash that was only listed')
      checkEqual(new TextDecoder().decode(read.state!), 'half done', 'state')
    },
  },
  {
    name: 'an ended lease is listed with its last holder: released and expired leases keep their holderId',
    unsupported: needsList,
    async run(c) {
      await c.backend.release(await c.backend.acquire(`${c.prefix}released`, 'holder-b', LONG_TTL_MS))
      await c.backend.acquire(`${c.prefix}expired`, 'holder-c', SHORT_TTL_MS)
      await c.expire()
      const [expired, released] = (await list(c, { prefix: c.prefix })).leases
      checkEqual(expired?.holderId, 'holder-c', 'holderId of an expired lease')
      checkEqual(released?.workId, `${c.prefix}released`, 'workId')
      checkEqual(released?.holderId, 'holder-b', 'holderId of a released lease (its last holder)')
    },
  },
  {
    name: 'list takes a signal: an aborted one throws its reason before any round trip, a live one keeps no listener',
    unsupported: needsList,
    async run(c) {
      await c.backend.acquire(`${c.prefix}x`, 'holder-a', LONG_TTL_MS)
      const reason = new Error('caller gave up')
      const before = c.roundTrips()
      const error = await rejection(
        () => list(c, { prefix: c.prefix, signal: AbortSignal.abort(reason) }),
        'list with an aborted signal',
      )
      check(
        error === reason,
        `list with an aborted signal must throw the signal's reason, got ${show(error)}`,
      )
      checkEqual(c.roundTrips(), before, 'list with an aborted signal: round trips')
      const { signal } = new AbortController()
      await Promise.all([
        list(c, { prefix: c.prefix, signal }),
        list(c, { prefix: c.prefix, limit: 1, signal }),
      ])
      checkIds(
        (await list(c, { prefix: c.prefix, signal })).leases,
        [`${c.prefix}x`],
        'list with a live signal',
      )
      checkEqual(getEventListeners(signal, 'abort').length, 0, "the signal's abort listeners after list")
    },
  },
  {
    name: 'list changes nothing, is one round trip a page, and an empty prefix lists the rest of the store too',
    unsupported: needsList,
    async run(c) {
      const record = await c.backend.acquire(`${c.prefix}x`, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(record, bytes('kept'), LONG_TTL_MS)
      const before = c.roundTrips()
      const page = await list(c, { prefix: c.prefix, limit: 1 })
      if (before !== undefined) checkEqual(c.roundTrips()! - before, 1, 'round trips of one page')
      checkIds(page.leases, [`${c.prefix}x`], 'the page')
      const everything = await list(c, { limit: 1_000 })
      check(
        ids(everything.leases).includes(`${c.prefix}x`) || everything.cursor !== undefined,
        'an empty prefix',
      )
      await c.backend.renew(record, LONG_TTL_MS)
      checkEqual(new TextDecoder().decode((await c.backend.readCheckpoint(record)).state!), 'kept', 'state')
    },
  },
  {
    name: 'bad list options are INVALID_ARGUMENT before any round trip',
    unsupported: needsList,
    async run(c) {
      const bad: Array<[string, unknown]> = [
        ['a string', 'all'],
        ['limit 0', { limit: 0 }],
        ['limit 1001', { limit: 1_001 }],
        ['limit 1.5', { limit: 1.5 }],
        ['limit as a string', { limit: '10' }],
        ['a numeric prefix', { prefix: 7 }],
        ['a prefix with U+0000', { prefix: 'a\u0000' }],
        ['a prefix of 256 code units', { prefix: 'x'.repeat(256) }],
        ['an empty cursor', { cursor: '' }],
        ['a cursor with a lone surrogate', { cursor: '\uD800' }],
        // The empty prefix is every lease's, and no cursor is the first page: both are valid.
        ...BAD_IDS.filter(([, id]) => id !== '' && id !== undefined).map(([label, id]): [string, unknown] => [
          `a prefix ${label}`,
          { prefix: id },
        ]),
        ...BAD_IDS.filter(([, id]) => id !== undefined).map(([label, id]): [string, unknown] => [
          `a cursor ${label}`,
          { cursor: id },
        ]),
      ]
      const loose = c.backend as unknown as { list(options: unknown): Promise<unknown> }
      for (const [label, options] of bad) {
        const before = c.roundTrips()
        const error = await rejection(() => loose.list(options), `list with ${label}`)
        check(
          isWorkleaseError(error, 'INVALID_ARGUMENT'),
          `list with ${label}: expected INVALID_ARGUMENT, got ${show(error)}`,
        )
        checkEqual(c.roundTrips(), before, `list with ${label}: round trips`)
      }
      const longest = 'x'.repeat(255)
      checkEqual(
        (await c.backend.list!({ prefix: longest })).leases.length,
        0,
        'list with a 255-code-unit prefix',
      )
      // Valid: a rejection fails the case.
      await c.backend.list!({ cursor: longest })
    },
  },
  {
    name: 'a prefix is paged to its end when more ids sort before it than a page holds',
    unsupported: needsList,
    async run(c) {
      // A store that applies the page limit before the prefix (a scan's Limit before its filter) ends
      // early here, without a cursor.
      for (let i = 0; i < 5; i++) await c.backend.acquire(`${c.prefix}a-${i}`, 'holder-a', LONG_TTL_MS)
      const wanted = [0, 1, 2].map((i) => `${c.prefix}b-${i}`)
      for (const workId of wanted) await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      for (let i = 0; i < 3; i++) await c.backend.acquire(`${c.prefix}c-${i}`, 'holder-a', LONG_TTL_MS)
      const seen: string[] = []
      let cursor: string | undefined
      for (let pages = 0; pages < 10; pages++) {
        const page = await c.backend.list!({
          prefix: `${c.prefix}b-`,
          limit: 2,
          ...(cursor ? { cursor } : {}),
        })
        seen.push(...page.leases.map((lease) => lease.workId))
        cursor = page.cursor
        if (cursor === undefined) break
      }
      checkEqual(show(seen), show(wanted), 'workIds over every page of the prefix')
    },
  },
  {
    name: "a released lease's expiry is listed strictly before the page's now",
    unsupported: needsList,
    async run(c) {
      const workId = `${c.prefix}released`
      await c.backend.release(await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS))
      const page = await c.backend.list!({ prefix: workId })
      const [listed] = page.leases
      check(
        listed !== undefined && listed.expiresAt.getTime() < page.now.getTime(),
        `released: expiresAt ${listed?.expiresAt.toISOString()} must be before now ${page.now.toISOString()}`,
      )
    },
  },
]
