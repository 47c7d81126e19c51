import type { Backend } from '@worklease/spec'
import type { LeaseOps } from './lease-ops.js'

/** The backends the benchmark knows, in report order. */
export const BACKEND_NAMES = ['memory', 'sqlite', 'postgres', 'mariadb', 'ferretdb', 'dynalite'] as const
export type BackendName = (typeof BACKEND_NAMES)[number]

/**
 * One backend under test: a server (started or given), the lease tables, and a way to open clients.
 *
 * ```ts
 * const target = await openPostgresTarget()
 * const session = await target.open(16)
 * ```
 */
export interface Target {
  readonly name: BackendName
  /** The server and its version, e.g. `PostgreSQL 15.20`, for the report. */
  readonly server: string
  /** Where the server came from (started here, or the environment variable that named it). */
  readonly origin: string
  /** How a peer library reaches the same server (connection string or endpoint), where it has one. */
  readonly url?: string
  /** Facts about the setup that a reader of the numbers needs (pool sizes, journal mode, ...). */
  readonly notes: readonly string[]
  /** A client (pool of `poolSize` connections where the client has one) over the target's tables. */
  open(poolSize: number): Promise<Session>
  /** Drops the tables and stops whatever this target started. */
  close(): Promise<void>
}

/**
 * One client, shared by both sides of the comparison: worklease's backend and the baseline send
 * through the same pool, each to its own table (or collection), and `roundTrips` counts both, the way
 * the driver tests count them (Kysely's log hook, command monitoring, SDK middleware, store operations).
 */
export interface Session {
  readonly backend: Backend
  readonly baseline: LeaseOps
  /** Statements, commands or requests sent so far by this session, either side. */
  roundTrips(): number
  /**
   * Starts recording the distinct statements each side sends (SQL: their text; MongoDB: each
   * command's fields and value types; DynamoDB: each request's expressions and value types), its
   * table's or collection's name replaced; the function returned stops and hands them over, so the
   * report can show that the baseline sends what the driver sends.
   */
  recordStatements?(): () => StatementTexts
  close(): Promise<void>
}

/** The distinct statements each side of a session sent. */
export interface StatementTexts {
  readonly worklease: readonly string[]
  readonly baseline: readonly string[]
}
