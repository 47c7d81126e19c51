import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createLeaseTable, dropLeaseTable, KyselyBackend, type LeaseDialect } from '@worklease/kysely'
import Database from 'better-sqlite3'
import { Kysely, MysqlDialect, PostgresDialect, SqliteDialect } from 'kysely'
import { createPool } from 'mysql2'
import pg from 'pg'

/** The built binary: these tests run what `npx worklease` runs (turbo builds it before `test`). */
export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url))

export const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const MYSQL_URL = process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

export interface CliResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * The environment of a run as a script sees it: no colour forcing inherited from the test runner,
 * no store from the developer's shell.
 */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ['FORCE_COLOR', 'NO_COLOR', 'WORKLEASE_STORE', 'TERM']) delete env[name]
  return { ...env, ...extra }
}

/** Runs `node dist/cli.js ...args` with stdout, stderr and stdin all pipes (stdin closed at once). */
export function cli(args: readonly string[], env: NodeJS.ProcessEnv = cleanEnv()): Promise<CliResult> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run pnpm build (turbo's test task does)`)
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { env, timeout: 20_000, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
    child.stdin?.end()
  })
}

/** A store the tests own: a database handle, a backend on a table of its own, and its --store URL. */
export interface TestStore {
  readonly name: string
  readonly url: string
  readonly table: string
  readonly backend: KyselyBackend
  /** The arguments that name this store and table. */
  readonly args: readonly string[]
  close(): Promise<void>
}

export type StoreKind = 'sqlite' | 'postgres' | 'mariadb'

export async function openTestStore(kind: StoreKind): Promise<TestStore> {
  const table = `cli_e2e_${randomBytes(5).toString('hex')}`
  let db: Kysely<unknown>
  let url: string
  let dialect: LeaseDialect | undefined
  let dir: string | undefined
  switch (kind) {
    case 'sqlite': {
      dir = mkdtempSync(join(tmpdir(), 'worklease-cli-e2e-'))
      const file = join(dir, 'leases.db')
      db = new Kysely({ dialect: new SqliteDialect({ database: new Database(file) }) })
      url = `sqlite:${file}`
      dialect = 'sqlite'
      break
    }
    case 'postgres':
      db = new Kysely({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: POSTGRES_URL, max: 2 }) }),
      })
      url = POSTGRES_URL
      dialect = 'postgres'
      break
    case 'mariadb':
      db = new Kysely({
        dialect: new MysqlDialect({ pool: createPool({ uri: MYSQL_URL, connectionLimit: 2 }) }),
      })
      url = MYSQL_URL
      break
  }
  await createLeaseTable(db, { table, ...(dialect ? { dialect } : {}) })
  const backend = new KyselyBackend({ db, table, ...(dialect ? { dialect } : {}) })
  return {
    name: kind,
    url,
    table,
    backend,
    args: ['--store', url, '--table', table],
    async close() {
      await dropLeaseTable(db, { table, ...(dialect ? { dialect } : {}) }).catch(() => undefined)
      await db.destroy()
      if (dir) rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** One line of stderr, and no stack trace: what every failure must look like. */
export function isOneLine(text: string): boolean {
  return text.trimEnd().split('\n').length === 1 && !/^\s+at /m.test(text)
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for escapes is the point
export const ANSI = /\u001b\[/
