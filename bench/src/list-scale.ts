import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { createLeaseTable, KyselyBackend } from '@worklease/kysely'
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'

/** What listing a large lease table page by page costs (issue 17: bounded memory at 100,000 leases). */
export interface ListScaleResult {
  readonly backend: 'postgres'
  readonly leases: number
  readonly pageSize: number
  readonly pages: number
  readonly listed: number
  readonly seconds: number
  readonly leasesPerSecond: number
  /**
   * Heap still in use after each page (after a forced GC when the process runs with --expose-gc, as
   * `pnpm bench` does), the highest minus the heap before the first page: what the listing retains.
   */
  readonly peakHeapGrowthMiB: number
  /** Whether a GC ran after every page; without it the figure includes garbage not yet collected. */
  readonly afterGc: boolean
  /** Heap in use before the first page. */
  readonly heapBaselineMiB: number
}

const gc = (globalThis as { gc?: () => void }).gc

/**
 * Fills a fresh PostgreSQL lease table with `count` released leases in one statement, then lists it
 * all through `KyselyBackend.list` a page at a time, as `worklease list` does, and records the heap
 * after every page. A listing that kept pages would grow with the table; one that does not stays flat.
 */
export async function measureListScale(
  url: string,
  count: number,
  pageSize = 1_000,
): Promise<ListScaleResult> {
  const db = new Kysely<any>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 2 }) }),
  })
  const table = `bench_list_${randomBytes(4).toString('hex')}`
  try {
    await createLeaseTable(db, { table })
    await sql`INSERT INTO ${sql.table(table)} (work_id, token, holder, expires_at, released, clean_handoff, checkpoint_seq)
SELECT 'lease-' || lpad(i::text, 7, '0'), 1 + i % 97, 'holder-' || (i % 50), 0, true, true, 0
FROM generate_series(1, ${count}) AS i`.execute(db)
    const backend = new KyselyBackend({ db, table })
    gc?.()
    const baseline = process.memoryUsage().heapUsed
    let peak = baseline
    let pages = 0
    let listed = 0
    let cursor: string | undefined
    const started = performance.now()
    do {
      const page = await backend.list({ limit: pageSize, ...(cursor === undefined ? {} : { cursor }) })
      pages++
      listed += page.leases.length
      cursor = page.cursor
      gc?.()
      peak = Math.max(peak, process.memoryUsage().heapUsed)
    } while (cursor !== undefined)
    const seconds = (performance.now() - started) / 1000
    const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10
    return {
      backend: 'postgres',
      leases: count,
      pageSize,
      pages,
      listed,
      seconds: Math.round(seconds * 100) / 100,
      leasesPerSecond: Math.round(listed / seconds),
      peakHeapGrowthMiB: mib(peak - baseline),
      heapBaselineMiB: mib(baseline),
      afterGc: gc !== undefined,
    }
  } finally {
    await sql`DROP TABLE IF EXISTS ${sql.table(table)}`.execute(db).catch(() => undefined)
    await db.destroy()
  }
}
