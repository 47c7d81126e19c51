// pnpm --filter @worklease/torture visibility [--rounds N] [--no-binary-log]
//
// Does a MariaDB reader see a commit that a crash then undoes? Eight connections each increment their
// own row while a ninth reads every row; the server is crashed (SIGSTOP + SIGKILL of its process group,
// as the torture's nemesis does) and restarted over the same data, and each row's value after recovery
// is compared with the largest the reader saw. A row seen higher than it came back is a commit another
// connection read and the crash rolled back.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Connection, createConnection } from 'mysql2/promise'
import { mariadbBinaries, privateMariadb } from './sql-servers.js'

const WRITERS = 8
const argv = process.argv.slice(2).filter((a) => a !== '--')
const roundsAt = argv.indexOf('--rounds')
const rounds = roundsAt >= 0 ? Number(argv[roundsAt + 1]) : 40
const binaryLog = !argv.includes('--no-binary-log')
if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds takes a whole number above 0')
const binaries = mariadbBinaries()
if (!binaries) throw new Error('no MariaDB server is installed here (mariadb-install-db and mariadbd)')

type Row = { id: number; v: number }
const dir = mkdtempSync(join(tmpdir(), 'worklease-visibility-'))
const server = await privateMariadb(dir, binaries, { binaryLog })
const connect = () =>
  createConnection({ host: '127.0.0.1', port: server.port, user: 'root', database: 'torture' })
const rowsOf = async (connection: Connection, sql: string, values: unknown[] = []) =>
  ((await connection.query(sql, values)) as unknown as [Row[]])[0]

const setup = await connect()
await setup.query('CREATE TABLE counters (id INT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB')
for (let id = 1; id <= WRITERS; id++) await setup.query('INSERT INTO counters VALUES (?, 0)', [id])
await setup.end()

let undone = 0
for (let round = 1; round <= rounds; round++) {
  const writers = await Promise.all(Array.from({ length: WRITERS }, connect))
  const reader = await connect()
  const seen = new Map<number, number>()
  let running = true
  // Each loop ends at the crash, with the connection error of the call in flight.
  const untilCrash = (loop: () => Promise<void>) => loop().catch(() => {})
  const writing = writers.map((writer, index) =>
    untilCrash(async () => {
      while (running) await writer.query('UPDATE counters SET v = v + 1 WHERE id = ?', [index + 1])
    }),
  )
  const reading = untilCrash(async () => {
    while (running) {
      for (const { id, v } of await rowsOf(reader, 'SELECT id, v FROM counters'))
        seen.set(id, Math.max(seen.get(id) ?? 0, Number(v)))
    }
  })
  await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 300))
  await server.restart()
  running = false
  await Promise.all([...writing, reading])
  for (const connection of [...writers, reader]) connection.destroy()
  const check = await connect()
  const lost = (await rowsOf(check, 'SELECT id, v FROM counters')).filter(
    ({ id, v }) => (seen.get(id) ?? 0) > Number(v),
  )
  await check.end()
  if (lost.length > 0) undone++
  const detail = lost.map(({ id, v }) => `row ${id} read ${seen.get(id)}, came back ${v}`).join('; ')
  console.log(`round ${round}: ${lost.length > 0 ? `a read saw a commit the crash undid (${detail})` : 'ok'}`)
}
await server.stop()
rmSync(dir, { recursive: true, force: true })
console.log(
  `MariaDB ${binaryLog ? 'with' : 'without'} the binary log: ${undone} of ${rounds} crashes undid a commit a reader had seen`,
)
