import { randomBytes } from 'node:crypto'
import { createLeaseCollection, MongoBackend } from '@worklease/mongodb'
// The same start script the mongodb package's tests use: builds FerretDB once, caches the binary.
import { mongoServer, startFerretdb } from '@worklease/test-servers'
import { MongoClient } from 'mongodb'
import { ferretdb1Version } from '../is-ferretdb1.js'
import type { Session, Target } from '../target.js'
import { mongoBaseline } from './mongo-baseline.js'
import { mongoCommandShape } from './mongo-command-shape.js'
import { SentTexts } from './sent-texts.js'

const DATABASE = 'worklease_bench'
// Sent by the driver for its own upkeep, never by a lease operation (as the driver tests count).
const DRIVER_COMMANDS = new Set([
  'hello',
  'ismaster',
  'isMaster',
  'endSessions',
  'ping',
  'buildInfo',
  'getMore',
])

/**
 * The MongoDB at `MONGODB_URL`, else FerretDB 2 at `FERRETDB2_URL` (scripts/servers.sh: atomic
 * findAndModify on PostgreSQL + DocumentDB), else FerretDB v1 started here (SQLite handler). FerretDB
 * 1.x needs the same options as in the driver's tests: no findAndModify projection, and no
 * cross-connection atomicity claim; measured against it, a findAndModify filtered on expiry is a read
 * and a write through SQLite, and no peer comparison means anything.
 */
export async function openMongoTarget(log: (line: string) => void): Promise<Target> {
  const found = mongoServer()
  const fromEnv = found?.variable
  const external = found?.url
  const server = external ? undefined : await startFerretdb({ log })
  const url = external ?? server!.url
  const admin = new MongoClient(url)
  const info = await admin.db('admin').command({ buildInfo: 1 })
  // FerretDB 2 answers buildInfo as MongoDB would, without a version of its own.
  const ferret = ferretdb1Version(info)
  const ferret1 = ferret !== undefined
  const run = randomBytes(4).toString('hex')
  const names = { worklease: `worklease_${run}`, baseline: `baseline_${run}` }
  await createLeaseCollection(admin.db(DATABASE), { collection: names.worklease })
  await createLeaseCollection(admin.db(DATABASE), { collection: names.baseline })
  const notes = ['one MongoClient (node driver 6) per session, command monitoring on for counting']
  if (ferret1) notes.push('FerretDB 1.x: findAndModifyProjection false, handler sqlite')
  return {
    name: 'ferretdb',
    server: ferret
      ? `FerretDB ${ferret} (MongoDB wire ${info.version})`
      : fromEnv === 'FERRETDB2_URL'
        ? `FerretDB 2 (MongoDB wire ${info.version}; no genuine mongod on this machine)`
        : `MongoDB ${info.version}`,
    origin: fromEnv ?? 'started here on 127.0.0.1',
    url,
    notes,
    async open(poolSize): Promise<Session> {
      const client = new MongoClient(url, { monitorCommands: true, maxPoolSize: poolSize })
      let commands = 0
      // Every 4th command of a side is described: a walk over each would tax the cells it watches.
      const sent = new SentTexts(4)
      client.on('commandStarted', ({ commandName, command }) => {
        if (DRIVER_COMMANDS.has(commandName)) return
        commands++
        const collection = command[commandName]
        const side =
          collection === names.worklease
            ? 'worklease'
            : collection === names.baseline
              ? 'baseline'
              : undefined
        if (side) sent.record(side, () => mongoCommandShape(commandName, command))
      })
      await client.connect()
      const db = client.db(DATABASE)
      return {
        backend: new MongoBackend({
          collection: db.collection(names.worklease),
          ...(ferret1
            ? {
                findAndModifyProjection: false,
                crossConnectionAtomic: false,
                crossConnectionAtomicNote: 'FerretDB 1.x: findAndModify is a read then a write',
              }
            : {}),
        }),
        baseline: mongoBaseline(db.collection(names.baseline), { projection: !ferret1 }),
        roundTrips: () => commands,
        recordStatements: () => sent.start(),
        close: () => client.close(),
      }
    },
    async close() {
      for (const name of Object.values(names))
        await admin
          .db(DATABASE)
          .collection(name)
          .drop()
          .catch(() => undefined)
      await admin.close()
      await server?.stop()
    },
  }
}
