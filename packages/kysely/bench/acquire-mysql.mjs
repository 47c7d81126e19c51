// Measures acquire on MariaDB in its two forms: RETURNING (one statement) and the MySQL 8 form
// (LAST_INSERT_ID, then one read for the expiry). Sequential, bounded, loopback only.
// Run after a build: node bench/acquire-mysql.mjs [count]
import { randomBytes } from 'node:crypto'
import { Kysely, MysqlDialect } from 'kysely'
import { createPool } from 'mysql2'
import { createLeaseTable, dropLeaseTable, KyselyBackend } from '../dist/index.js'

const url = process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
const count = Number(process.argv[2] ?? 500)
const db = new Kysely({ dialect: new MysqlDialect({ pool: createPool({ uri: url, connectionLimit: 1 }) }) })
const table = `wl_bench_${randomBytes(4).toString('hex')}`
await createLeaseTable(db, { table })
try {
  for (const dialect of ['mariadb', 'mysql', 'mariadb', 'mysql']) {
    const backend = new KyselyBackend({ db, table, dialect })
    const prefix = randomBytes(4).toString('hex')
    const started = process.hrtime.bigint()
    for (let i = 0; i < count; i++) await backend.acquire(`${prefix}-${i}`, 'bench', 60_000)
    const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6
    console.log(
      `${dialect.padEnd(8)} ${count} new-workId acquires: ${(elapsedMs / count).toFixed(3)} ms each`,
    )
  }
} finally {
  await dropLeaseTable(db, { table })
  await db.destroy()
}
