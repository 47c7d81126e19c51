import type { Backend, BackendCapabilities, LeaseRecord, RenewOutcome } from '@worklease/spec'
import { isWorkleaseError } from '@worklease/spec'
import { check, checkEqual, checkRejects, rejection, show } from '../assertions.js'
import { type CaseContext, forge, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition, SupportContext } from '../suite-case.js'
import { BAD_IDS, BAD_TTLS, failingSecondRoundTrip, needsFailNextCall } from './shared.js'

const needsRenewMany = (caps: BackendCapabilities) =>
  caps.renewMany ? undefined : 'the backend cannot renew many leases in one call (capabilities.renewMany)'

const needsRenewManyCounted = (caps: BackendCapabilities, support: SupportContext) =>
  needsRenewMany(caps) ??
  (support.countsRoundTrips ? undefined : 'the harness does not count round trips (roundTrips)')

type RenewMany = (records: unknown, ttlMs: unknown, options?: unknown) => Promise<RenewOutcome[]>

function renewManyOf(backend: Backend): RenewMany {
  check(
    typeof backend.renewMany === 'function',
    'capabilities.renewMany is set but backend.renewMany is missing',
  )
  return backend.renewMany.bind(backend) as RenewMany
}

async function checkOutcomes(
  c: CaseContext,
  records: readonly LeaseRecord[],
  ttlMs: number,
  expected: readonly RenewOutcome[],
  what: string,
): Promise<void> {
  const got = await renewManyOf(c.backend)(records, ttlMs)
  check(Array.isArray(got), `${what}: renewMany must return an array, got ${show(got)}`)
  checkEqual(got.length, expected.length, `${what}: number of outcomes`)
  const wrong = expected.flatMap((want, i) =>
    got[i] === want
      ? []
      : [`#${i} ${JSON.stringify(records[i]!.workId)}: expected ${want}, got ${show(got[i])}`],
  )
  check(wrong.length === 0, `${what}: outcomes in input order disagree:\n  ${wrong.join('\n  ')}`)
}

/** The lease is held by nobody else: a second holder can take it at once (then lets it go). */
async function checkFree(c: CaseContext, workId: string, what: string): Promise<void> {
  const taken = await c.backend.acquire(workId, 'holder-probe', LONG_TTL_MS).catch((error: unknown) => error)
  check(!isWorkleaseError(taken), `${what}: a refused record must change nothing, but ${show(taken)}`)
  await c.backend.release(taken as LeaseRecord)
}

export const renewManyCases: CaseDefinition[] = [
  {
    name: 'each record gets its own outcome, in input order: held, expired, taken over, released, revoked, forged',
    unsupported: needsRenewMany,
    async run(c) {
      const held = [
        await c.backend.acquire(c.workId('held'), 'holder-a', LONG_TTL_MS),
        await c.backend.acquire(c.workId('held'), 'holder-a', LONG_TTL_MS),
        await c.backend.acquire(c.workId('held'), 'holder-a', LONG_TTL_MS),
      ]
      const expired = await c.backend.acquire(c.workId('expired'), 'holder-a', SHORT_TTL_MS)
      const takenOver = await c.backend.acquire(c.workId('taken'), 'holder-a', SHORT_TTL_MS)
      const released = await c.backend.acquire(c.workId('released'), 'holder-a', LONG_TTL_MS)
      await c.backend.release(released)
      const revoked = await c.backend.acquire(c.workId('revoked'), 'holder-a', LONG_TTL_MS)
      const canRevoke = c.capabilities.revoke === true && typeof c.backend.revoke === 'function'
      if (canRevoke) await c.backend.revoke!(revoked.workId)
      else await c.backend.release(revoked)
      const forgedBase = await c.backend.acquire(c.workId('forged'), 'holder-a', LONG_TTL_MS)
      const forged = forge(forgedBase, { fencingToken: forgedBase.fencingToken + 1n })
      const neverTaken = forge(held[0]!, { workId: c.workId('never') })
      await c.expire()
      await c.backend.acquire(takenOver.workId, 'holder-b', LONG_TTL_MS)
      // Interleaved, so outcomes reported in another order (or all alike) cannot pass.
      const records = [
        expired,
        held[0]!,
        takenOver,
        released,
        held[1]!,
        revoked,
        forged,
        neverTaken,
        held[2]!,
      ]
      const expected: RenewOutcome[] = [
        'expired',
        'renewed',
        'fenced',
        'fenced',
        'renewed',
        'fenced',
        'fenced',
        'fenced',
        'renewed',
      ]
      await checkOutcomes(c, records, LONG_TTL_MS, expected, 'mixed batch')
      // Nothing refused moved: the expired lease is still free, the others are still who they were.
      await checkFree(c, expired.workId, 'the expired lease after the batch')
      await checkFree(c, released.workId, 'the released lease after the batch')
      await checkFree(c, neverTaken.workId, 'the never-taken workId after the batch')
      await checkRejects(() => c.backend.renew(takenOver, LONG_TTL_MS), 'FENCED', 'the taken-over record')
      await checkRejects(() => c.backend.renew(forged, LONG_TTL_MS), 'FENCED', 'the forged record')
      await c.backend.renew(forgedBase, LONG_TTL_MS)
      for (const record of held) await c.backend.renew(record, LONG_TTL_MS)
    },
  },
  {
    name: "each record is judged by its own token, never by another record's (same holder, tokens crossed)",
    unsupported: needsRenewMany,
    async run(c) {
      // One holder took both workIds twice, so both are at the same token now, and `stale` (the
      // first lease of `retaken`) has an older one. A backend that matched the batch's workIds and
      // its tokens separately (any workId with any token) would renew `stale`.
      const retaken = c.workId('retaken')
      const other = c.workId('other')
      const stale = await c.backend.acquire(retaken, 'holder-a', LONG_TTL_MS)
      await c.backend.release(stale)
      const current = await c.backend.acquire(retaken, 'holder-a', LONG_TTL_MS)
      await c.backend.release(await c.backend.acquire(other, 'holder-a', LONG_TTL_MS))
      const otherCurrent = await c.backend.acquire(other, 'holder-a', LONG_TTL_MS)
      check(
        current.fencingToken !== stale.fencingToken && otherCurrent.fencingToken === current.fencingToken,
        `set-up: expected tokens to cross, got ${show([stale, current, otherCurrent].map((r) => r.fencingToken))}`,
      )
      await checkOutcomes(c, [stale, otherCurrent], LONG_TTL_MS, ['fenced', 'renewed'], 'crossed tokens')
      await c.backend.renew(current, LONG_TTL_MS)
    },
  },
  {
    name: 'renewed records stay held past their first expiry; a refused one in the batch renews nobody else',
    unsupported: needsRenewMany,
    async run(c) {
      const ttl = c.clientClock ? SHORT_TTL_MS : 2_000
      const kept = await c.backend.acquire(c.workId('kept'), 'holder-a', ttl)
      const dropped = await c.backend.acquire(c.workId('dropped'), 'holder-a', ttl)
      await c.backend.release(dropped)
      await c.elapse(ttl * 0.6)
      await checkOutcomes(c, [dropped, kept], ttl, ['fenced', 'renewed'], 'renewal')
      await c.elapse(ttl * 0.6)
      await checkRejects(
        () => c.backend.acquire(kept.workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire of a lease renewed by renewMany, past its first expiry',
      )
      await checkFree(c, dropped.workId, 'the released lease of the batch')
    },
  },
  {
    // A record of an earlier tenure is not valid, whether the tenure that took over is still live or
    // has expired too: judging the expiry before the token (in the write, or in the read that tells
    // expired from fenced) reports such a record 'expired', as if its holder still had the lease.
    name: 'a record of an earlier tenure is fenced even when the tenure that took over has expired too, by the same holder or another',
    unsupported: needsRenewMany,
    async run(c) {
      const byOther = await c.backend.acquire(c.workId('other'), 'holder-a', SHORT_TTL_MS)
      const bySelf = await c.backend.acquire(c.workId('self'), 'holder-a', SHORT_TTL_MS)
      await c.expire()
      await c.backend.acquire(byOther.workId, 'holder-b', SHORT_TTL_MS)
      const again = await c.backend.acquire(bySelf.workId, 'holder-a', SHORT_TTL_MS)
      const held = await c.backend.acquire(c.workId('held'), 'holder-a', LONG_TTL_MS)
      await c.expire()
      await checkOutcomes(
        c,
        [byOther, held, bySelf],
        LONG_TTL_MS,
        ['fenced', 'renewed', 'fenced'],
        'records of earlier tenures, their successors expired',
      )
      // The successor's own record is the valid one: it is the one refused for its expiry.
      await checkOutcomes(c, [again], LONG_TTL_MS, ['expired'], "the expired successor's own record")
      for (const record of [byOther, bySelf]) {
        await checkRejects(() => c.backend.renew(record, LONG_TTL_MS), 'FENCED', `renew of ${record.workId}`)
        await checkFree(c, record.workId, `${record.workId} after the batch`)
      }
    },
  },
  {
    name: 'lookalike workIds (prefixes, case, normalization, %, _, quotes, separators) are judged each on its own',
    unsupported: needsRenewMany,
    async run(c) {
      const base = c.workId('Look')
      const ids = [
        base,
        `${base}x`,
        base.toUpperCase(),
        base.toLowerCase(),
        `${base}e\u0301`,
        `${base}\u00e9`,
        `${base}%`,
        `${base}_`,
        `${base}'`,
        `${base}"`,
        `${base}\\`,
        `${base} `,
        // What an array literal or a list would split or unquote: a driver passing ids as one
        // serialized parameter must quote each (the first names two of the ids above).
        `${base},${base}x`,
        `${base}}`,
        `{${base}`,
        `${base}\\"`,
        `${base}\n`,
        // What JSON escapes: a driver passing ids as a JSON array must decode each back exactly.
        `${base}\t`,
        `${base}\u001f`,
        `${base}\u2028`,
        `${base}\u{1F600}`,
        `${base}/`,
      ]
      const records: LeaseRecord[] = []
      for (const workId of ids) records.push(await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS))
      // Every other one released: a driver that matches rows back loosely mixes up neighbours.
      const expected = records.map((_, i): RenewOutcome => (i % 2 === 1 ? 'fenced' : 'renewed'))
      for (const [i, record] of records.entries()) if (i % 2 === 1) await c.backend.release(record)
      await checkOutcomes(c, records, LONG_TTL_MS, expected, 'lookalike ids')
      const reversed = [...records].reverse()
      await checkOutcomes(c, reversed, LONG_TTL_MS, [...expected].reverse(), 'lookalike ids, reversed')
      // Without the control characters too: a driver may serialize a batch one way when it has none.
      const plain = records.map((record, i) => ({ record, outcome: expected[i]! }))
      const printable = plain.filter(({ record }) =>
        [...record.workId].every((char) => char.codePointAt(0)! >= 0x20),
      )
      await checkOutcomes(
        c,
        printable.map(({ record }) => record),
        LONG_TTL_MS,
        printable.map(({ outcome }) => outcome),
        'lookalike ids without control characters',
      )
      for (const [i, record] of records.entries()) {
        if (i % 2 === 1) await checkFree(c, record.workId, `released ${JSON.stringify(record.workId)}`)
        else await c.backend.renew(record, LONG_TTL_MS)
      }
    },
  },
  {
    // A driver keying outcomes by workId and token run together ('job-1' at 12, 'job-11' at 2: both
    // 'job-112') hands one record's outcome to the other.
    name: 'records whose workId and token run together alike (job-1 at token 12, job-11 at token 2) are judged apart',
    unsupported: needsRenewMany,
    async run(c) {
      const base = c.workId('run')
      const short = `${base}-1`
      const long = `${base}-11`
      let atTwelve = await c.backend.acquire(short, 'holder-a', LONG_TTL_MS)
      for (let taken = 1; taken < 12; taken++) {
        await c.backend.release(atTwelve)
        atTwelve = await c.backend.acquire(short, 'holder-a', LONG_TTL_MS)
      }
      checkEqual(atTwelve.fencingToken, 12n, 'token after 12 acquires')
      await c.backend.release(await c.backend.acquire(long, 'holder-a', LONG_TTL_MS))
      const atTwo = await c.backend.acquire(long, 'holder-a', LONG_TTL_MS)
      checkEqual(
        `${atTwelve.workId}${atTwelve.fencingToken}`,
        `${atTwo.workId}${atTwo.fencingToken}`,
        'the two run together',
      )
      await c.backend.release(atTwo)
      await checkOutcomes(
        c,
        [atTwelve, atTwo],
        LONG_TTL_MS,
        ['renewed', 'fenced'],
        'job-1@12, job-11@2 released',
      )
      await checkOutcomes(
        c,
        [atTwo, atTwelve],
        LONG_TTL_MS,
        ['fenced', 'renewed'],
        'job-11@2 released, job-1@12',
      )
      await c.backend.release(atTwelve)
      const again = await c.backend.acquire(long, 'holder-a', LONG_TTL_MS)
      checkEqual(again.fencingToken, 3n, 'token of job-11 taken again')
      await checkOutcomes(
        c,
        [atTwelve, again],
        LONG_TTL_MS,
        ['fenced', 'renewed'],
        'job-1@12 released, job-11@3',
      )
    },
  },
  {
    name: 'renewMany never shortens: a batch with a shorter ttl keeps the later expiry',
    unsupported: needsRenewMany,
    async run(c) {
      const ttl = c.clientClock ? 1_000 : 3_000
      const records = [
        await c.backend.acquire(c.workId(), 'holder-a', ttl),
        await c.backend.acquire(c.workId(), 'holder-a', ttl),
      ]
      await checkOutcomes(c, records, SHORT_TTL_MS, ['renewed', 'renewed'], 'shorter ttl')
      await c.expire()
      for (const record of records) {
        await checkRejects(
          () => c.backend.acquire(record.workId, 'holder-b', LONG_TTL_MS),
          'LEASE_HELD',
          'acquire after a shorter renewMany, before the first expiry',
        )
      }
      if (c.clientClock) {
        await c.elapse(ttl - SHORT_TTL_MS - 1)
        await checkRejects(
          () => c.backend.acquire(records[0]!.workId, 'holder-b', LONG_TTL_MS),
          'LEASE_HELD',
          '1 ms before the first expiry',
        )
        await c.elapse(1)
        const next = await c.backend.acquire(records[0]!.workId, 'holder-b', LONG_TTL_MS)
        checkEqual(next.fencingToken, 2n, 'token once the first expiry passed')
      }
    },
  },
  {
    name: 'renewMany extends to now + ttl when that is later, exactly on a client clock',
    unsupported: needsRenewMany,
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', SHORT_TTL_MS)
      await c.elapse(SHORT_TTL_MS / 2)
      await checkOutcomes(c, [record], 1_000, ['renewed'], 'longer ttl')
      if (!c.clientClock) return
      await c.elapse(999)
      await checkRejects(
        () => c.backend.acquire(record.workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        '1 ms before now + ttl',
      )
      await c.elapse(1)
      await c.backend.acquire(record.workId, 'holder-b', LONG_TTL_MS)
    },
  },
  {
    name: 'renewMany of held leases is one round trip; an empty list none',
    unsupported: (caps, context) =>
      needsRenewMany(caps) ??
      (context.countsRoundTrips ? undefined : 'the harness does not count round trips (roundTrips)'),
    async run(c) {
      const records: LeaseRecord[] = []
      for (let i = 0; i < 5; i++) records.push(await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS))
      let before = c.roundTrips()!
      await checkOutcomes(
        c,
        records,
        LONG_TTL_MS,
        records.map(() => 'renewed'),
        'held leases',
      )
      checkEqual(c.roundTrips()! - before, 1, 'round trips of renewMany with every record renewed')
      before = c.roundTrips()!
      const empty = await renewManyOf(c.backend)([], LONG_TTL_MS)
      checkEqual(show(empty), '[]', 'renewMany([])')
      checkEqual(c.roundTrips()! - before, 0, 'round trips of renewMany([])')
    },
  },
  {
    name: 'renewMany takes capabilities.renewMany.maxRecords records in one call',
    unsupported: needsRenewMany,
    timeoutMs: 60_000,
    async run(c) {
      const { maxRecords } = c.capabilities.renewMany!
      check(
        Number.isSafeInteger(maxRecords) && maxRecords >= 1,
        `capabilities.renewMany.maxRecords must be a positive integer, got ${show(maxRecords)}`,
      )
      const size = Math.min(maxRecords, 5_000)
      // Held records first, in the middle and last: a driver that sent only part of the batch (a
      // chunk lost) reports the rest refused, which forged records alone would not show.
      const heldAt = new Set([0, Math.floor(size / 2), size - 1])
      const held = new Map<number, LeaseRecord>()
      for (const index of heldAt)
        held.set(index, await c.backend.acquire(c.workId(`full-${index}`), 'holder-a', LONG_TTL_MS))
      // Forged records of workIds nobody holds fill the rest: a few acquires instead of maxRecords.
      const first = held.get(0)!
      const records = Array.from(
        { length: size },
        (_, i) => held.get(i) ?? forge(first, { workId: `${first.workId}/${i}` }),
      )
      const expected = records.map((_, i): RenewOutcome => (heldAt.has(i) ? 'renewed' : 'fenced'))
      await checkOutcomes(c, records, LONG_TTL_MS, expected, `${records.length} records`)
    },
  },
  {
    // Found by a review (session 49): store failures were only ever injected on a first round trip,
    // and a driver that reads again to tell expired from fenced could turn that read's into outcomes.
    name: 'a failure of the store on the read after a refused batch is passed on, never as outcomes',
    unsupported: (caps, support) => needsRenewMany(caps) ?? needsFailNextCall(caps, support),
    async run(c) {
      const ttl = c.clientClock ? SHORT_TTL_MS : 2_000
      const held = await c.backend.acquire(c.workId('held'), 'holder-a', LONG_TTL_MS)
      const expired = await c.backend.acquire(c.workId('expired'), 'holder-a', ttl)
      await c.expire(ttl)
      const batch = [held, expired, forge(held, { workId: c.workId('nobody') })]
      const answered = await failingSecondRoundTrip(
        c,
        'renewMany of a batch with refused records',
        () => renewManyOf(c.backend)(batch, LONG_TTL_MS),
        () => c.backend.readCheckpoint(held),
      )
      if (answered) checkEqual(show(answered.answer), show(['renewed', 'expired', 'fenced']), 'outcomes')
    },
  },
  {
    name: 'bad input to renewMany is INVALID_ARGUMENT before any round trip, and renews nothing',
    unsupported: needsRenewMany,
    async run(c) {
      const ttl = c.clientClock ? SHORT_TTL_MS : 2_000
      const a = await c.backend.acquire(c.workId(), 'holder-a', ttl)
      const b = await c.backend.acquire(c.workId(), 'holder-a', ttl)
      const other = await c.backend.acquire(c.workId(), 'holder-b', ttl)
      const { maxRecords } = c.capabilities.renewMany!
      const tooMany = Array.from({ length: maxRecords + 1 }, (_, i) =>
        i === 0 ? a : forge(a, { workId: `${a.workId}/${i}` }),
      )
      const bad: [string, unknown, unknown][] = [
        ['not an array', a, ttl],
        ['null', null, ttl],
        ['a malformed record', [a, { ...b, fencingToken: 1 }], ttl],
        ['records of two holders', [a, other], ttl],
        ['the same workId twice', [a, b, a], ttl],
        ['the same workId twice, other tokens', [a, forge(a, { fencingToken: a.fencingToken + 1n })], ttl],
        [`${maxRecords + 1} records (maxRecords + 1)`, tooMany, ttl],
        ['a fencingToken as a decimal string', [a, forge(b, { fencingToken: String(b.fencingToken) })], ttl],
        ...BAD_IDS.flatMap(([label, id]): [string, unknown, unknown][] => [
          [`a workId ${label}`, [a, forge(b, { workId: id })], ttl],
          [`a holderId ${label}`, [forge(a, { holderId: id }), forge(b, { holderId: id })], ttl],
        ]),
        ...BAD_TTLS.map(([label, badTtl]): [string, unknown, unknown] => [`ttl ${label}`, [a, b], badTtl]),
      ]
      for (const [label, records, ttlMs] of bad) {
        const before = c.roundTrips()
        await checkRejects(
          () => renewManyOf(c.backend)(records, ttlMs),
          'INVALID_ARGUMENT',
          `renewMany(${label})`,
        )
        checkEqual(c.roundTrips(), before, `round trips of renewMany(${label})`)
      }
      const aborted = AbortSignal.abort(new Error('caller gave up'))
      const before = c.roundTrips()
      const error = await rejection(
        () => renewManyOf(c.backend)([a, b], ttl, { signal: aborted }),
        'renewMany with an aborted signal',
      )
      check(
        error instanceof Error && error.message === 'caller gave up',
        `renewMany with an aborted signal must throw its reason, got ${show(error)}`,
      )
      checkEqual(c.roundTrips(), before, 'round trips of renewMany with an aborted signal')
      // None of the rejected calls renewed anything: both leases expire at their first expiry.
      await c.expire(ttl)
      await checkFree(c, a.workId, 'a lease after rejected renewMany calls')
      await checkFree(c, b.workId, 'b lease after rejected renewMany calls')
      // A list read once: whatever it answers on a second read, the snapshot decides.
      const first = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      const second = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      const intruder = await c.backend.acquire(c.workId(), 'holder-b', LONG_TTL_MS)
      let reads = 0
      const lyingList = new Proxy([first, second], {
        get(target, key, receiver) {
          if (key === '1' && ++reads > 1) return intruder
          return Reflect.get(target, key, receiver)
        },
      })
      const outcomes = await renewManyOf(c.backend)(lyingList, LONG_TTL_MS).catch((error: unknown) => error)
      if (!isWorkleaseError(outcomes, 'INVALID_ARGUMENT')) {
        check(Array.isArray(outcomes), `renewMany(a list whose reads differ): ${show(outcomes)}`)
        checkEqual(show(outcomes), show(['renewed', 'renewed']), 'renewMany(a list whose reads differ)')
        checkEqual(reads, 1, 'reads of an element of the list')
      }
    },
  },
  {
    name: "renewMany reads each record once: one that turns into another holder's after validation renews nobody",
    unsupported: needsRenewMany,
    async run(c) {
      const ttl = c.clientClock ? SHORT_TTL_MS : 2_000
      // The intruder's stale record validates; every later read of it answers the victim's values.
      const intruder = await c.backend.acquire(c.workId('intruder'), 'holder-a', LONG_TTL_MS)
      await c.backend.release(intruder)
      const victim = await c.backend.acquire(c.workId('victim'), 'holder-a', ttl)
      const reads = new Map<string, number>()
      const shifting = {} as LeaseRecord
      for (const key of ['workId', 'holderId', 'fencingToken', 'expiresAt'] as const) {
        Object.defineProperty(shifting, key, {
          enumerable: true,
          get() {
            const n = (reads.get(key) ?? 0) + 1
            reads.set(key, n)
            return n === 1 ? intruder[key] : victim[key]
          },
        })
      }
      const outcomes = await renewManyOf(c.backend)([shifting], LONG_TTL_MS).catch((error: unknown) => error)
      if (!isWorkleaseError(outcomes, 'INVALID_ARGUMENT')) {
        checkEqual(show(outcomes), show(['fenced']), "renewMany of a stale record that turns into another's")
      }
      await c.expire(ttl)
      await checkFree(c, victim.workId, 'the victim after renewMany of a shape-shifting record')
    },
  },
  {
    name: 'renewMany with refused records takes at most one more round trip, however many are refused',
    unsupported: needsRenewManyCounted,
    async run(c) {
      const held = await c.backend.acquire(c.workId('held'), 'holder-a', LONG_TTL_MS)
      const refused: LeaseRecord[] = []
      for (let i = 0; i < 3; i++) {
        const record = await c.backend.acquire(c.workId('released'), 'holder-a', LONG_TTL_MS)
        await c.backend.release(record)
        refused.push(record)
      }
      refused.push(forge(held, { workId: c.workId('never') }))
      const before = c.roundTrips()!
      await checkOutcomes(
        c,
        [refused[0]!, held, ...refused.slice(1)],
        LONG_TTL_MS,
        ['fenced', 'renewed', 'fenced', 'fenced', 'fenced'],
        'a batch with four refused records',
      )
      const trips = c.roundTrips()! - before
      check(trips >= 1 && trips <= 2, `renewMany with refused records: ${trips} round trips, expected 1..2`)
    },
  },
  {
    name: 'renewMany with one refused record among 119 held still takes at most one more round trip',
    unsupported: needsRenewManyCounted,
    timeoutMs: 60_000,
    async run(c) {
      // More than a reply's first batch (MongoDB's cursors return 101 documents before a getMore):
      // the read that names the outcomes must bring every held record back in its one round trip.
      const size = Math.min(c.capabilities.renewMany!.maxRecords, 120)
      const refused = await c.backend.acquire(c.workId('released'), 'holder-a', LONG_TTL_MS)
      await c.backend.release(refused)
      const records = [refused]
      for (let i = 1; i < size; i++)
        records.push(await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS))
      const before = c.roundTrips()!
      await checkOutcomes(
        c,
        records,
        LONG_TTL_MS,
        records.map((_, i): RenewOutcome => (i === 0 ? 'fenced' : 'renewed')),
        `one refused record among ${size - 1} held`,
      )
      const trips = c.roundTrips()! - before
      check(trips >= 1 && trips <= 2, `renewMany of ${size} records: ${trips} round trips, expected 1..2`)
    },
  },
  {
    name: 'renewMany options that are not an object, or a signal that is not an AbortSignal, are INVALID_ARGUMENT',
    unsupported: needsRenewMany,
    async run(c) {
      const ttl = c.clientClock ? SHORT_TTL_MS : 2_000
      const record = await c.backend.acquire(c.workId(), 'holder-a', ttl)
      const bad: Array<[string, unknown]> = [
        ['a string', 'fast'],
        ['a number', 7],
        ['null', null],
        ['a signal that is not an AbortSignal', { signal: { aborted: false } }],
      ]
      for (const [label, options] of bad) {
        const before = c.roundTrips()
        await checkRejects(
          () => renewManyOf(c.backend)([record], LONG_TTL_MS, options),
          'INVALID_ARGUMENT',
          `renewMany with options ${label}`,
        )
        checkEqual(c.roundTrips(), before, `round trips of renewMany with options ${label}`)
      }
      await c.expire(ttl)
      await checkFree(c, record.workId, 'a lease after renewMany calls with bad options')
    },
  },
  {
    name: 'the same records renewed again and again, past their first expiry, stay renewed',
    unsupported: needsRenewMany,
    timeoutMs: 30_000,
    async run(c) {
      // Judged by the records' own expiresAt (as of the acquire), every renewal after the first
      // expiry would read as expired.
      const ttl = c.clientClock ? SHORT_TTL_MS : 1_000
      const records = [
        await c.backend.acquire(c.workId(), 'holder-a', ttl),
        await c.backend.acquire(c.workId(), 'holder-a', ttl),
      ]
      for (let round = 1; round <= 4; round++) {
        await c.elapse(ttl * 0.6)
        await checkOutcomes(
          c,
          records,
          ttl,
          ['renewed', 'renewed'],
          `renewal ${round}, ${round * 0.6} ttl in`,
        )
      }
    },
  },
  {
    name: 'renewMany of an empty list still refuses a bad ttl, bad options and an aborted signal',
    unsupported: needsRenewMany,
    async run(c) {
      const renewMany = renewManyOf(c.backend)
      await checkRejects(() => renewMany([], 0), 'INVALID_ARGUMENT', 'renewMany([], 0)')
      await checkRejects(
        () => renewMany([], LONG_TTL_MS, 'options'),
        'INVALID_ARGUMENT',
        "renewMany([], ttl, 'options')",
      )
      const reason = new Error('gave up')
      const error = await rejection(
        () => renewMany([], LONG_TTL_MS, { signal: AbortSignal.abort(reason) }),
        'renewMany([]) with an aborted signal',
      )
      check(
        error === reason,
        `renewMany([]) with an aborted signal must reject with its reason, got ${show(error)}`,
      )
    },
  },
]
