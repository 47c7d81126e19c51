// The fence typed by the user's Kysely database type. `pnpm typecheck` (tsc over test/) is the judge
// here: every `@ts-expect-error` below fails the type check if its misspelling ever compiles. The
// tests also run the typed calls on SQLite, so the typed signatures are the ones that work.
import Database from 'better-sqlite3'
import { type Generated, Kysely, SqliteDialect, sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, expectTypeOf, test } from 'vitest'
import { type FenceColumn, type FenceTable, SqlFence } from '../src/index.js'

interface Schema {
  orders: { id: number; total: number | null; fencing_token: bigint | null }
  order_lines: { order_id: number; line: number; qty: number; lease_token: bigint | null }
  audit_log: { id: Generated<number>; message: string }
}

let db: Kysely<Schema>
beforeEach(async () => {
  db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: new Database(':memory:') }) })
  await sql`CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER, fencing_token INTEGER)`.execute(db)
  await sql`CREATE TABLE order_lines (order_id INTEGER, line INTEGER, qty INTEGER, lease_token INTEGER,
    PRIMARY KEY (order_id, line))`.execute(db)
})
afterEach(() => db.destroy())

describe('with a Kysely database type', () => {
  test('the fence column and the fenced tables come from the type', () => {
    expectTypeOf<FenceColumn<Schema>>().toEqualTypeOf<
      'id' | 'total' | 'fencing_token' | 'order_id' | 'line' | 'qty' | 'lease_token' | 'message'
    >()
    expectTypeOf<FenceTable<Schema, 'fencing_token'>>().toEqualTypeOf<'orders'>()
    expectTypeOf<FenceTable<Schema, 'lease_token'>>().toEqualTypeOf<'order_lines'>()
    expectTypeOf(new SqlFence(db).column).toEqualTypeOf<'fencing_token'>()
    expectTypeOf(new SqlFence(db, { column: 'lease_token' }).column).toEqualTypeOf<'lease_token'>()
    // @ts-expect-error a misspelled fence column
    new SqlFence(db, { column: 'fencing_tokn' })
  })

  test('upsert checks the table, the key and the values', async () => {
    const fence = new SqlFence(db)
    expect(await fence.upsert({ table: 'orders', key: { id: 7 }, values: { total: 42 }, token: 3n })).toBe(
      true,
    )
    expect(await fence.upsert({ table: 'orders', key: { id: 7 }, values: { total: 1 }, token: 2n })).toBe(
      false,
    )
    const refused = async () => {
      // @ts-expect-error a misspelled table
      await fence.upsert({ table: 'order', key: { id: 7 }, values: {}, token: 3n })
      // @ts-expect-error a table without the fence column
      await fence.upsert({ table: 'audit_log', key: { id: 1 }, values: { message: 'm' }, token: 3n })
      // @ts-expect-error a misspelled key column
      await fence.upsert({ table: 'orders', key: { idd: 7 }, values: {}, token: 3n })
      // @ts-expect-error a misspelled value column
      await fence.upsert({ table: 'orders', key: { id: 7 }, values: { totl: 42 }, token: 3n })
      // @ts-expect-error a column of another table
      await fence.upsertOrThrow({ table: 'orders', key: { id: 7 }, values: { qty: 1 }, token: 3n })
    }
    expect(refused).toBeTypeOf('function') // never run: its calls are wrong on purpose

    const lines = new SqlFence(db, { column: 'lease_token' })
    await lines.upsertOrThrow({
      table: 'order_lines',
      key: { order_id: 7, line: 1 },
      values: { qty: 3 },
      token: 5n,
    })
    const wrongTable = async () => {
      // @ts-expect-error orders has no lease_token
      await lines.upsert({ table: 'orders', key: { id: 7 }, values: {}, token: 5n })
    }
    expect(wrongTable).toBeTypeOf('function')
  })

  test('update takes only queries on a table with the fence column', async () => {
    const fence = new SqlFence(db)
    await fence.upsert({ table: 'orders', key: { id: 7 }, values: { total: 1 }, token: 3n })
    expect(await fence.update(db.updateTable('orders').set({ total: 2 }).where('id', '=', 7), 3n)).toBe(true)
    expect(await fence.update(db.updateTable('orders').set({ total: 3 }).where('id', '=', 7), 2n)).toBe(false)
    // An aliased table is checked under its alias.
    expect(
      await fence.update(db.updateTable('orders as o').set({ total: 4 }).where('o.id', '=', 7), 3n),
    ).toBe(true)
    const refused = async () => {
      // @ts-expect-error audit_log has no fencing_token
      await fence.update(db.updateTable('audit_log').set({ message: 'x' }), 3n)
      // @ts-expect-error order_lines has lease_token, not fencing_token
      await fence.updateOrThrow(db.updateTable('order_lines').set({ qty: 1 }), 3n)
      // @ts-expect-error aliased, still audit_log
      await fence.update(db.updateTable('audit_log as a').set({ message: 'x' }), 3n)
    }
    expect(refused).toBeTypeOf('function')
  })
})

test('without a database type every name is a string, as before', async () => {
  const untyped = db as unknown as Kysely<any>
  const fence = new SqlFence(untyped, { column: 'fencing_token' })
  expectTypeOf(fence).toEqualTypeOf<SqlFence<any, 'fencing_token'>>()
  const table: string = 'orders'
  expect(await fence.upsert({ table, key: { id: 8 }, values: { total: 1 }, token: 1n })).toBe(true)
  expect(await fence.update(untyped.updateTable('orders').set({ total: 2 }).where('id', '=', 8), 1n)).toBe(
    true,
  )
  // Misspellings compile (and fail on the server), as they always did without a type.
  await expect(fence.upsert({ table: 'orderz', key: { id: 1 }, values: {}, token: 1n })).rejects.toThrow()
})
