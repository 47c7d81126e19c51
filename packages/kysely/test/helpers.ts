import { type Clock, isLeaseHeldError, isWorkleaseError } from '@worklease/spec'
import { type Kysely, sql } from 'kysely'
import type { DialectFamily } from '../src/index.js'
import type { KyselyHarness } from './kysely-harness.js'

export const ignoredClock: Clock = { now: () => Date.now() }

export const bytes = (text: string) => new TextEncoder().encode(text)

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The outcome of a call as 'ok' or its worklease code; anything else is rethrown as the test failure. */
export function code(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'ok',
    (error: unknown) => {
      if (isWorkleaseError(error)) return error.code
      throw error
    },
  )
}

/** A call's outcome: 'ok' (renewMany: its outcomes), LEASE_HELD with its holder, a worklease code, or a store error. */
export function outcome(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    (value) => (Array.isArray(value) ? value.join(',') : 'ok'),
    (error: unknown) => {
      if (isLeaseHeldError(error)) return `LEASE_HELD by ${error.holder?.holderId}`
      if (isWorkleaseError(error)) return error.code
      return `store error ${(error as { code?: string }).code ?? String(error)}`
    },
  )
}

export interface SeedRow {
  workId: string
  token: bigint
  holder: string
  expiresAtMs: number
  released?: boolean
  cleanHandoff?: boolean
}

/** Writes a row as if earlier leases had left it there (through the uncounted admin connection). */
export async function seed(harness: KyselyHarness, family: DialectFamily, row: SeedRow): Promise<void> {
  const flag = (value: boolean) => (family === 'postgres' ? value : value ? 1 : 0)
  await harness.storage.admin
    .insertInto(harness.storage.table)
    .values({
      work_id: row.workId,
      token: row.token.toString(),
      holder: row.holder,
      expires_at: row.expiresAtMs,
      released: flag(row.released ?? false),
      clean_handoff: flag(row.cleanHandoff ?? true),
    })
    .execute()
}

export interface StoredRow {
  workId: string
  token: bigint
  holder: string
  expiresAtMs: number
  released: boolean
  cleanHandoff: boolean
}

const text = (value: unknown) =>
  value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : String(value)

/** Every row of the harness's table, decoded the same way for every database. */
export async function rows(
  harness: KyselyHarness,
  family: DialectFamily,
  db?: Kysely<any>,
): Promise<StoredRow[]> {
  const { table, admin } = harness.storage
  const type = sql.raw(family === 'postgres' ? 'text' : family === 'mysql' ? 'CHAR' : 'TEXT')
  const result = await sql<
    Record<string, unknown>
  >`SELECT work_id, CAST(token AS ${type}) AS token, holder, expires_at, released, clean_handoff FROM ${sql.table(table)}`.execute(
    db ?? admin,
  )
  return result.rows.map((row) => ({
    workId: text(row.work_id),
    token: BigInt(String(row.token)),
    holder: text(row.holder),
    expiresAtMs: Number(row.expires_at),
    released: Number(row.released) === 1,
    cleanHandoff: Number(row.clean_handoff) === 1,
  }))
}
