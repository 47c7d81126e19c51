import { MAX_FENCING_TOKEN } from '@worklease/spec'
import { sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import {
  createLeaseTable,
  createLeaseTableMigration,
  type DialectFamily,
  dropLeaseTable,
  KyselyBackend,
  upgradeLeaseTable,
} from '../src/index.js'
import { bytes, code, outcome, rows, seed, sleep } from './helpers.js'

import { type KyselyHarness, kyselyHarness } from './kysely-harness.js'
import { runs, TARGETS } from './targets.js'

const HOUR = 3_600_000
const TWO_POW_60 = 2n ** 60n

for (const target of TARGETS) {
  const family: DialectFamily = target.filter

  describe.skipIf(!runs(target))(`KyselyBackend on ${target.name}`, () => {
    let h: KyselyHarness
    beforeEach(async () => {
      h = await kyselyHarness(target)
    })
    afterEach(() => h.close())

    const statements = async (operation: () => Promise<unknown>): Promise<number> => {
      const before = h.roundTrips()
      await operation()
      return h.roundTrips() - before
    }

    test('statement counts: 1 per happy-path operation; failures as documented in the README', async () => {
      const a = h.open()
      const b = h.open()
      // Settles each backend's MySQL-family RETURNING probe.
      let record = await a.acquire('warm-up', 'a', HOUR)
      await b.acquire('warm-up-b', 'b', HOUR)
      // MySQL has no INSERT ... RETURNING: the upsert, then a read of the expiry it set.
      expect(await statements(async () => (record = await a.acquire('job', 'a', HOUR)))).toBe(
        target.dialect === 'mysql' ? 2 : 1,
      )
      // LEASE_HELD names the holder in the same statement; SQLite and MySQL read the row once more.
      expect(await statements(() => code(b.acquire('job', 'b', HOUR)))).toBe(
        family === 'sqlite' || target.dialect === 'mysql' ? 2 : 1,
      )
      expect(await statements(() => a.renew(record, HOUR))).toBe(1)
      expect(await statements(() => a.checkpoint(record, bytes('s'), HOUR))).toBe(1)
      expect(await statements(() => a.readCheckpoint(record))).toBe(1)
      expect(await statements(() => a.release(record))).toBe(1)
      // Failure paths, on a released (so invalid) record.
      expect(await statements(async () => expect(await code(a.renew(record, HOUR))).toBe('FENCED'))).toBe(2)
      expect(
        await statements(async () =>
          expect(await code(a.checkpoint(record, bytes('s'), HOUR))).toBe('FENCED'),
        ),
      ).toBe(family === 'mysql' ? 2 : 1)
      expect(await statements(async () => expect(await code(a.release(record))).toBe('FENCED'))).toBe(1)
      expect(await statements(async () => expect(await code(a.readCheckpoint(record))).toBe('FENCED'))).toBe(
        1,
      )
      const short = await a.acquire('short', 'a', 1)
      await sleep(20)
      expect(
        await statements(async () => expect(await code(a.renew(short, HOUR))).toBe('LEASE_EXPIRED')),
      ).toBe(2)
      expect(
        await statements(async () => expect(await code(a.acquire('', 'a', HOUR))).toBe('INVALID_ARGUMENT')),
      ).toBe(0)
    })

    test('a signal that fires while a call is out rejects it with its reason, not with the reply', async () => {
      const backend = h.open()
      const record = await backend.acquire('job', 'a', HOUR)
      const sentBefore = h.roundTrips()
      const abandoned = (call: (signal: AbortSignal) => Promise<unknown>) => {
        const controller = new AbortController()
        const reason = new Error('given up')
        const pending = call(controller.signal)
        controller.abort(reason)
        return expect(pending).rejects.toBe(reason)
      }
      await abandoned((signal) => backend.acquire('other', 'a', HOUR, { signal }))
      await abandoned((signal) => backend.renew(record, HOUR, { signal }))
      await abandoned((signal) => backend.checkpoint(record, bytes('s'), HOUR, { signal }))
      await abandoned((signal) => backend.readCheckpoint(record, { signal }))
      await abandoned((signal) => backend.list({ signal }))
      await abandoned((signal) => backend.renewMany([record], HOUR, { signal }))
      await abandoned((signal) => backend.release(record, { signal }))
      // Only the waits were abandoned: the seven statements still finish (before the table is dropped).
      for (let waited = 0; h.roundTrips() - sentBefore < 7 && waited < 10_000; waited += 10) await sleep(10)
      expect(h.roundTrips() - sentBefore).toBeGreaterThanOrEqual(7)
    })

    test('revoke is one statement with or without an expected token, on every path', async () => {
      const a = h.open()
      const operator = h.open()
      const held = await a.acquire('revoked', 'a', HOUR)
      await a.acquire('kept', 'a', HOUR)
      // Each shape once, so a later count is the statement alone.
      await operator.revoke('warm-up')
      await operator.revoke('warm-up', { fencingToken: 1n })
      const revoke = async (workId: string, fencingToken?: bigint) => {
        let revoked: boolean | undefined
        const count = await statements(async () => {
          revoked = await operator.revoke(workId, fencingToken === undefined ? undefined : { fencingToken })
        })
        return { revoked, count }
      }
      expect(await revoke('kept', 2n)).toEqual({ revoked: false, count: 1 })
      expect(await revoke('kept', MAX_FENCING_TOKEN)).toEqual({ revoked: false, count: 1 })
      expect(await revoke('never', 1n)).toEqual({ revoked: false, count: 1 })
      expect(await revoke('revoked', held.fencingToken)).toEqual({ revoked: true, count: 1 })
      expect(await revoke('revoked', held.fencingToken)).toEqual({ revoked: false, count: 1 })
      // The two shapes are cached apart: a revoke without a token after one with is unconditional.
      expect(await revoke('kept')).toEqual({ revoked: true, count: 1 })
      expect(
        await statements(async () =>
          expect(await code(operator.revoke('kept', { fencingToken: 0n }))).toBe('INVALID_ARGUMENT'),
        ),
      ).toBe(0)
    })

    test('renewMany: one statement when all are renewed, one more read when some were refused; a store failure throws', async () => {
      const a = h.open()
      const held = [await a.acquire('batch-1', 'a', HOUR), await a.acquire('batch-2', 'a', HOUR)]
      const released = await a.acquire('batch-3', 'a', HOUR)
      await a.release(released)
      const expired = await a.acquire('batch-4', 'a', 1)
      await sleep(20)
      let outcomes: unknown
      expect(await statements(async () => (outcomes = await a.renewMany(held, HOUR)))).toBe(1)
      expect(outcomes).toEqual(['renewed', 'renewed'])
      expect(
        await statements(
          async () => (outcomes = await a.renewMany([expired, held[0]!, released, held[1]!], HOUR)),
        ),
      ).toBe(2)
      expect(outcomes).toEqual(['expired', 'renewed', 'fenced', 'renewed'])
      expect(await statements(() => a.renewMany([], HOUR))).toBe(0)
      // A store failure (the table is gone) is thrown for the whole call, never turned into outcomes.
      const missing = new KyselyBackend({ db: h.storage.admin, table: 'wl_batch_no_such_table' })
      const failure = await missing.renewMany(held, HOUR).catch((error: unknown) => error)
      expect(failure).toBeInstanceOf(Error)
      expect(failure).not.toHaveProperty('code', 'FENCED')
      expect(Array.isArray(failure)).toBe(false)
    })

    test('renewMany reads no row back when every lease was renewed: the count says so', async () => {
      let rowsRead = 0
      const db = h.storage.connect()
      // The backend drops the caller's plugins (withoutPlugins): this one it is handed back.
      const counting = db.withPlugin({
        transformQuery: (args) => args.node,
        transformResult: async (args) => {
          rowsRead += args.result.rows.length
          return args.result
        },
      })
      db.withoutPlugins = () => counting
      try {
        const a = new KyselyBackend({ db, table: h.storage.table })
        const held = await Promise.all(
          Array.from({ length: 100 }, (_, i) => a.acquire(`rows-${i}`, 'a', HOUR)),
        )
        rowsRead = 0
        expect(await a.renewMany(held, HOUR)).toEqual(held.map(() => 'renewed'))
        // Reading the 1,000 renewed workIds of a full batch back cost more client CPU than the rest.
        expect(rowsRead).toBe(0)
      } finally {
        if (h.storage.separateConnections) await db.destroy()
      }
    })

    test('SET ordering (the MySQL pitfall): a released lease whose expiry is still ahead is free, and clean_handoff reads released before it is cleared', async () => {
      const backend = h.open()
      await seed(h, family, {
        workId: 'released',
        token: 5n,
        holder: 'old',
        expiresAtMs: Date.now() + HOUR,
        released: true,
      })
      await seed(h, family, {
        workId: 'crashed',
        token: 7n,
        holder: 'old',
        expiresAtMs: 0,
        cleanHandoff: true,
      })
      const afterRelease = await backend.acquire('released', 'new', HOUR)
      expect(afterRelease.fencingToken).toBe(6n)
      expect(await backend.readCheckpoint(afterRelease)).toEqual({ state: null, cleanHandoff: true })
      const afterCrash = await backend.acquire('crashed', 'new', HOUR)
      expect(afterCrash.fencingToken).toBe(8n)
      expect(await backend.readCheckpoint(afterCrash)).toEqual({ state: null, cleanHandoff: false })
      const stored = new Map((await rows(h, family)).map((row) => [row.workId, row]))
      expect(stored.get('released')).toMatchObject({
        token: 6n,
        holder: 'new',
        released: false,
        cleanHandoff: true,
      })
      expect(stored.get('crashed')).toMatchObject({
        token: 8n,
        holder: 'new',
        released: false,
        cleanHandoff: false,
      })
      // A held lease is left exactly as it was, whatever the assignment order.
      expect(await code(backend.acquire('released', 'other', HOUR))).toBe('LEASE_HELD')
      expect((await rows(h, family)).find((row) => row.workId === 'released')).toEqual(stored.get('released'))
    })

    test('tokens above 2^53 stay exact: a row seeded at 2^60 is acquired over as 2^60 + 1', async () => {
      const backend = h.open()
      await seed(h, family, { workId: 'big', token: TWO_POW_60, holder: 'old', expiresAtMs: 0 })
      const record = await backend.acquire('big', 'a', HOUR)
      expect(record.fencingToken).toBe(TWO_POW_60 + 1n)
      // 2^60 + 1 and 2^60 + 2 are the same double: a lossy comparison would accept the forgery.
      const forged = { ...record, fencingToken: TWO_POW_60 + 2n }
      expect(await code(backend.renew(forged, HOUR))).toBe('FENCED')
      expect(await code(backend.checkpoint(forged, bytes('x'), HOUR))).toBe('FENCED')
      expect(await code(backend.readCheckpoint(forged))).toBe('FENCED')
      expect(await code(backend.release(forged))).toBe('FENCED')
      await backend.checkpoint(record, bytes('exact'), HOUR)
      await backend.renew(record, HOUR)
      expect(await backend.readCheckpoint(record)).toEqual({ state: bytes('exact'), cleanHandoff: false })
      await backend.release(record)
      expect((await backend.acquire('big', 'b', HOUR)).fencingToken).toBe(TWO_POW_60 + 2n)
      await seed(h, family, {
        workId: 'almost-max',
        token: MAX_FENCING_TOKEN - 1n,
        holder: 'old',
        expiresAtMs: 0,
      })
      expect((await backend.acquire('almost-max', 'a', HOUR)).fencingToken).toBe(MAX_FENCING_TOKEN)
    })

    test('a token at 2^63 - 1 cannot be bumped: TOKENS_EXHAUSTED, never LEASE_HELD or an overflow error', async () => {
      const backend = h.open()
      await seed(h, family, { workId: 'max', token: MAX_FENCING_TOKEN, holder: 'old', expiresAtMs: 0 })
      await seed(h, family, {
        workId: 'max-held',
        token: MAX_FENCING_TOKEN,
        holder: 'old',
        expiresAtMs: Date.now() + HOUR,
      })
      expect(await code(backend.acquire('max', 'a', HOUR))).toBe('TOKENS_EXHAUSTED')
      // Held at the ceiling is still just held.
      expect(await code(backend.acquire('max-held', 'a', HOUR))).toBe('LEASE_HELD')
      const stored = await rows(h, family)
      expect(stored.map((row) => [row.workId, row.token, row.holder])).toEqual(
        expect.arrayContaining([
          ['max', MAX_FENCING_TOKEN, 'old'],
          ['max-held', MAX_FENCING_TOKEN, 'old'],
        ]),
      )
    })

    test('ids with quotes, backslashes, %, emoji and SQL keywords round-trip exactly, only ever as parameters', async () => {
      const backend = h.open()
      const ids = [
        "it's",
        'say "hi"',
        'back\\slash\\',
        '100%',
        '%',
        '_',
        'a_b%c',
        'emoji 🦀🚀👩‍👩‍👧',
        "'; DROP TABLE worklease_leases; --",
        `\`); DELETE FROM ${h.storage.table}; --`,
        'SELECT',
        'NULL',
        'null',
        'tab\tnew\nline\r',
        'x'.repeat(255),
        '🦀'.repeat(127),
        'ー'.repeat(255),
      ]
      for (const id of ids) {
        const record = await backend.acquire(id, id, HOUR)
        expect(record).toMatchObject({ workId: id, holderId: id, fencingToken: 1n })
        await backend.checkpoint(record, bytes(id), HOUR)
        expect(await backend.readCheckpoint(record)).toEqual({ state: bytes(id), cleanHandoff: true })
        await backend.renew(record, HOUR)
      }
      const stored = await rows(h, family)
      expect(stored.map((row) => row.workId).sort()).toEqual([...ids].sort())
      for (const row of stored) expect(row.holder).toBe(row.workId)
    })

    test('ids differing only by case, trailing space or normalization are distinct leases and holders', async () => {
      const backend = h.open()
      const ids = ['a', 'a ', 'a  ', 'A', ' a', 'é', 'e\u0301', 'ss', 'ß']
      for (const id of ids) expect((await backend.acquire(id, 'holder', HOUR)).fencingToken).toBe(1n)
      const record = await backend.acquire('job', 'worker ', HOUR)
      for (const holderId of ['worker', 'worker  ', 'Worker ']) {
        expect(await code(backend.renew({ ...record, holderId }, HOUR))).toBe('FENCED')
        expect(await code(backend.readCheckpoint({ ...record, holderId }))).toBe('FENCED')
      }
      await backend.renew(record, HOUR)
      expect((await rows(h, family)).length).toBe(ids.length + 1)
    })

    test('time moves inside a caller transaction (the PostgreSQL now() pitfall): expiry uses the clock, not the transaction start', async () => {
      const db = h.storage.connect()
      try {
        await db.transaction().execute(async (trx) => {
          const backend = new KyselyBackend({ db: trx, table: h.storage.table, allowTransaction: true })
          const first = await backend.acquire('tx', 'a', 200)
          await sleep(400)
          expect(await code(backend.renew(first, 200))).toBe('LEASE_EXPIRED')
          const second = await backend.acquire('tx', 'b', HOUR)
          expect(second.fencingToken).toBe(2n)
          expect(second.expiresAt.getTime()).toBeGreaterThanOrEqual(first.expiresAt.getTime() + 200)
        })
      } finally {
        if (h.storage.separateConnections) await db.destroy()
      }
    })

    test('the table helpers refuse a db that is no Kysely, and options that are no object or cannot be read, before any statement', async () => {
      let statements = 0
      const db = h.storage.connect(() => {
        statements++
      })
      try {
        const throwing = Object.defineProperty({}, 'table', {
          get() {
            throw new Error('boom')
          },
        })
        for (const helper of [createLeaseTable, dropLeaseTable, upgradeLeaseTable]) {
          for (const [on, options] of [
            [{}, { table: h.storage.table }],
            [db, null],
            [db, throwing],
          ] as const) {
            expect(await code(helper(on as never, options as never)), helper.name).toBe('INVALID_ARGUMENT')
          }
        }
        // The migration reads its options once, when it is made: null or a throwing getter is refused
        // then, and the table it checked is the table `up` creates.
        // Found by a review (session 50): an invalid dialect or ifNotExists was refused only when
        // `up` ran, inside the Migrator's transaction, maybe long after.
        for (const options of [null, throwing, { dialect: 'oracle' }, { ifNotExists: 'yes' }]) {
          expect(() => createLeaseTableMigration(options as never)).toThrow(
            expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
          )
        }
        let reads = 0
        const shifting = {
          get table() {
            return ++reads === 1 ? h.storage.table : 'never_checked'
          },
        }
        const migration = createLeaseTableMigration(shifting)
        await migration.up(db)
        expect(reads).toBe(1)
        await migration.down?.(db)
        expect(statements).toBeGreaterThan(0)
      } finally {
        if (h.storage.separateConnections) await db.destroy()
      }
    })

    test('options that cannot be read, or an allowTransaction that is no boolean, are INVALID_ARGUMENT', async () => {
      const db = h.storage.connect()
      try {
        const invalid = expect.objectContaining({ code: 'INVALID_ARGUMENT' })
        const throwing = Object.defineProperty({ table: h.storage.table }, 'db', {
          get() {
            throw new Error('boom')
          },
        })
        expect(() => new KyselyBackend(throwing as never)).toThrow(invalid)
        const options = { db, table: h.storage.table, allowTransaction: 'yes' }
        expect(() => new KyselyBackend(options as never)).toThrow(invalid)
        // Runs queries but cannot shed plugins: a TypeError from the constructor's last line, before.
        const executorOnly = { getExecutor: () => db.getExecutor() }
        expect(() => new KyselyBackend({ db: executorOnly as never, table: h.storage.table })).toThrow(
          invalid,
        )
      } finally {
        if (h.storage.separateConnections) await db.destroy()
      }
    })

    test('a backend on a transaction is refused unless allowTransaction: a rollback hands out a token again', async () => {
      const db = h.storage.connect()
      const rollback = new Error('rollback')
      try {
        await db
          .transaction()
          .execute(async (trx) => {
            expect(() => new KyselyBackend({ db: trx, table: h.storage.table })).toThrow(
              expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/roll/) }),
            )
            // What the refusal prevents: the token below is undone by the rollback and handed out again.
            const inside = new KyselyBackend({ db: trx, table: h.storage.table, allowTransaction: true })
            expect((await inside.acquire('tx-token', 'a', HOUR)).fencingToken).toBe(1n)
            throw rollback
          })
          .catch((error: unknown) => {
            if (error !== rollback) throw error
          })
        expect((await h.open().acquire('tx-token', 'b', HOUR)).fencingToken).toBe(1n)
      } finally {
        if (h.storage.separateConnections) await db.destroy()
      }
    })

    // InnoDB's REPEATABLE READ (MySQL's and MariaDB's default) answers a plain SELECT from the
    // transaction's first snapshot, while an UPDATE matches the latest committed row: a failure path
    // that read the snapshot found a lease revoked since "valid and live" and called the refused
    // write a success. SQLite refuses a write from a transaction whose snapshot went stale (BUSY): a
    // store error, which is what it must stay.
    test('inside a caller transaction, a lease changed by another process since its first read is judged as it is now', async (context) => {
      if (!h.storage.separateConnections) {
        return context.skip(
          'one connection shared by every backend: nobody else writes while a transaction is open',
        )
      }
      const db = h.storage.connect()
      try {
        const outside = h.open()
        const a = await outside.acquire('tx-a', 'holder-a', HOUR)
        const b = await outside.acquire('tx-b', 'holder-a', HOUR)
        const seen = await db.transaction().execute(async (trx) => {
          const inside = new KyselyBackend({ db: trx, table: h.storage.table, allowTransaction: true })
          await inside.readCheckpoint(a) // the transaction's snapshot is taken here
          expect(await outside.revoke('tx-a')).toBe(true)
          expect(await outside.revoke('tx-b')).toBe(true)
          await outside.acquire('tx-new', 'holder-b', HOUR)
          return {
            acquire: await outcome(inside.acquire('tx-new', 'holder-t', HOUR)),
            renew: await outcome(inside.renew(a, HOUR)),
            checkpoint: await outcome(inside.checkpoint(a, bytes('late'), HOUR)),
            renewMany: await outcome(inside.renewMany([a, b], HOUR)),
          }
        })
        const busy = 'store error SQLITE_BUSY_SNAPSHOT'
        expect(seen).toEqual(
          family === 'sqlite'
            ? { acquire: busy, renew: busy, checkpoint: busy, renewMany: busy }
            : {
                acquire: 'LEASE_HELD by holder-b',
                renew: 'FENCED',
                checkpoint: 'FENCED',
                renewMany: 'fenced,fenced',
              },
        )
        expect((await outside.list({ prefix: 'tx-a' })).leases[0]).toMatchObject({
          holderId: '',
          checkpointBytes: null,
        })
      } finally {
        if (h.storage.separateConnections) await db.destroy()
      }
    })

    test('expiresAt is now + ttl on the server clock, in epoch milliseconds, exactly as stored', async () => {
      const backend = h.open()
      const before = Date.now()
      const record = await backend.acquire('clock', 'a', 90_000)
      const after = Date.now()
      // Server and tests share this machine's clock; the slack covers scheduling, not a time zone.
      expect(record.expiresAt.getTime()).toBeGreaterThanOrEqual(before + 90_000 - 1_000)
      expect(record.expiresAt.getTime()).toBeLessThanOrEqual(after + 90_000 + 1_000)
      expect((await rows(h, family))[0]!.expiresAtMs).toBe(record.expiresAt.getTime())
      await backend.release(record)
      const released = (await rows(h, family))[0]!
      expect(released.released).toBe(true)
      expect(released.expiresAtMs).toBeLessThan(Date.now() + 1_000)
    })

    test('an empty state is stored as empty, not as "no checkpoint"', async () => {
      const backend = h.open()
      const record = await backend.acquire('empty', 'a', HOUR)
      expect((await backend.readCheckpoint(record)).state).toBeNull()
      await backend.checkpoint(record, new Uint8Array(0), HOUR)
      const { state } = await backend.readCheckpoint(record)
      expect(state).toBeInstanceOf(Uint8Array)
      expect(state?.byteLength).toBe(0)
      // A view into a larger buffer stores only its own bytes.
      const view = new Uint8Array([9, 1, 2, 3, 9]).subarray(1, 4)
      await backend.checkpoint(record, view, HOUR)
      expect((await backend.readCheckpoint(record)).state).toEqual(new Uint8Array([1, 2, 3]))
    })

    test('store failures propagate as the client threw them (a missing table is not LEASE_HELD)', async () => {
      const db = h.storage.connect()
      try {
        const backend = new KyselyBackend({ db, table: 'no_such_table_here' })
        const error = await backend.acquire('job', 'a', HOUR).then(
          () => undefined,
          (reason: unknown) => reason,
        )
        expect(error).toBeInstanceOf(Error)
        expect((error as { code?: unknown }).code).not.toMatch(/^(LEASE_HELD|FENCED|LEASE_EXPIRED)$/)
      } finally {
        if (h.storage.separateConnections) await db.destroy()
      }
    })

    test('a table from before checkpoint_seq is upgraded in place by upgradeLeaseTable and createLeaseTable', async () => {
      const { admin, table } = h.storage
      await sql`ALTER TABLE ${sql.table(table)} DROP COLUMN checkpoint_seq`.execute(admin)
      await seed(h, family, { workId: 'old', token: 5n, holder: 'old', expiresAtMs: 0, released: true })
      // The new statements name the column: a store error, never a lease outcome.
      const error = await h
        .open()
        .acquire('old', 'a', HOUR)
        .then(
          () => undefined,
          (reason: unknown) => reason,
        )
      expect((error as { code?: unknown }).code).not.toMatch(/^(LEASE_HELD|TOKENS_EXHAUSTED)$/)
      await upgradeLeaseTable(admin, { table })
      await upgradeLeaseTable(admin, { table }) // idempotent
      await createLeaseTable(admin, { table })
      const backend = h.open()
      const record = await backend.acquire('old', 'a', HOUR)
      expect(record.fencingToken).toBe(6n)
      await backend.checkpoint(record, bytes('second'), HOUR, { sequence: 2 })
      await backend.checkpoint(record, bytes('first'), HOUR, { sequence: 1 })
      expect(await backend.readCheckpoint(record)).toEqual({ state: bytes('second'), cleanHandoff: true })
      // Found by a review (session 50): on SQLite the added column had no CHECK, which SQLite's ADD
      // COLUMN takes (3.37+): text there sorts above every sequence, and no checkpoint stored again.
      if (family === 'sqlite') {
        await expect(
          sql`UPDATE ${sql.table(table)} SET checkpoint_seq = 'x' WHERE work_id = 'old'`.execute(admin),
        ).rejects.toThrow(/CHECK constraint failed/)
      }
    })

    test('createLeaseTable returns the backend options and keeps an existing table unless ifNotExists: false', async () => {
      const { admin, table } = h.storage
      // The harness created the table; again is a no-op that hands back what KyselyBackend needs.
      const created = await createLeaseTable(admin, { table })
      expect(created).toEqual({ table })
      await h.open().acquire('kept', 'a', HOUR)
      const error = await createLeaseTable(admin, { table, ifNotExists: false }).then(
        () => undefined,
        (reason: unknown) => reason,
      )
      expect(error).toBeInstanceOf(Error)
      expect(await rows(h, family)).toHaveLength(1)
      expect(await code(createLeaseTable(admin, { table, ifNotExists: 1 as unknown as boolean }))).toBe(
        'INVALID_ARGUMENT',
      )
    })

    test('concurrent acquirers over separate connections: exactly one winner', async () => {
      const backends = [h.open(), h.open(), h.open()]
      const results = await Promise.allSettled(
        Array.from({ length: 30 }, (_, i) => backends[i % 3]!.acquire('contended', `racer-${i}`, HOUR)),
      )
      const winners = results.filter((result) => result.status === 'fulfilled')
      expect(winners).toHaveLength(1)
      for (const result of results) {
        if (result.status === 'rejected')
          expect((result.reason as { code?: unknown }).code).toBe('LEASE_HELD')
      }
    })
  })
}
