import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type RawBuilder,
  sql,
} from 'kysely'
import { describe, expect, test } from 'vitest'
import { StatementCache } from '../src/statement-cache.js'

// Compiles PostgreSQL text ($1, $2, ...) without a server: the cache never executes anything.
const db = new Kysely<any>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (kysely) => new PostgresIntrospector(kysely),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
})

function countingCache(): { cache: StatementCache; compiles: () => number } {
  let compiles = 0
  const cache = new StatementCache((query) => {
    compiles++
    return query.compile(db)
  })
  return { cache, compiles: () => compiles }
}

describe('StatementCache', () => {
  test('compiles a key once and binds every call its own values, in placeholder order', () => {
    const { cache, compiles } = countingCache()
    const template = (a: unknown, b: unknown) => sql`SELECT ${b} AS b, ${a} AS a WHERE x = ${a}`
    const first = cache.bind('pick', ['x', 1], template)
    const second = cache.bind('pick', ['y', 2], template)
    expect(first.sql).toBe('SELECT $1 AS b, $2 AS a WHERE x = $3')
    expect(second.sql).toBe(first.sql)
    expect(first.parameters).toEqual([1, 'x', 'x'])
    expect(second.parameters).toEqual([2, 'y', 'y'])
    expect(compiles()).toBe(1)
  })

  test('the text is what the template compiles to when built with the values themselves', () => {
    const { cache } = countingCache()
    const template = (id: unknown, ttl: unknown) =>
      sql`UPDATE t SET e = GREATEST(e, now_ms() + ${ttl}) WHERE id = ${id} AND released = false`
    const values = ['job-1', 30_000]
    const direct = template(values[0], values[1]).compile(db)
    const bound = cache.bind('update', values, template)
    expect(bound.sql).toBe(direct.sql)
    expect(bound.parameters).toEqual(direct.parameters)
  })

  test('keys keep their shapes apart', () => {
    const { cache, compiles } = countingCache()
    const one = cache.bind('one', ['a'], (a) => sql`SELECT ${a}`)
    const two = cache.bind('two', ['a', 'b'], (a, b) => sql`SELECT ${a}, ${b}`)
    expect([one.sql, two.sql]).toEqual(['SELECT $1', 'SELECT $1, $2'])
    expect(compiles()).toBe(2)
  })

  test('a template that puts in a value it was not handed is refused: it could not be bound again', () => {
    const { cache } = countingCache()
    const template = (a: unknown): RawBuilder<unknown> => sql`SELECT ${a}, ${42}`
    expect(() => cache.bind('constant', ['a'], template)).toThrow(
      'statement constant: a parameter is not one of the values it was given',
    )
  })

  test('compile builds a statement of its own shape every time', () => {
    const { cache, compiles } = countingCache()
    const batch = (ids: string[]) => sql`SELECT * FROM t WHERE id IN (${sql.join(ids)})`
    expect(cache.compile(batch(['a'])).sql).toBe('SELECT * FROM t WHERE id IN ($1)')
    expect(cache.compile(batch(['a', 'b'])).parameters).toEqual(['a', 'b'])
    expect(compiles()).toBe(2)
  })
})
