import { randomUUID } from 'node:crypto'
import { isWorkleaseError, MAX_FENCING_TOKEN } from '@worklease/spec'
import { type Collection, type Document, MongoClient } from 'mongodb'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { fencedUpdate, fencedUpdateOne, fencedUpdateOneOrThrow, fenceFilter } from '../src/index.js'
import {
  countingClient,
  FERRETDB_NOTE,
  ferretdb1,
  ferretdbVersion,
  TEST_DATABASE,
  url,
} from './mongo-harness.js'

const TWO_POW_53 = 2n ** 53n
const READ = { useBigInt64: true } as const

function code(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'ok',
    (error: unknown) => {
      if (isWorkleaseError(error)) return error.code
      throw error
    },
  )
}

let admin: MongoClient
let orders: Collection<Document>
let name: string
const clients: MongoClient[] = []

beforeAll(() => {
  admin = new MongoClient(url)
})
afterAll(() => admin.close())

beforeEach(async () => {
  name = `orders_${randomUUID().replaceAll('-', '')}`
  orders = await admin.db(TEST_DATABASE).createCollection(name)
})
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()))
  await orders.drop().catch(() => undefined)
})

/** A collection over a client of its own, as another process would have; counts its commands. */
function open(): { collection: Collection<Document>; commands: () => string[] } {
  const { client, commands } = countingClient()
  clients.push(client)
  return { collection: client.db(TEST_DATABASE).collection(name), commands }
}

const stored = (id: string) => orders.findOne({ _id: id as never }, READ)

describe('fenceFilter and fencedUpdate with updateOne', () => {
  test('a stale token is refused and changes nothing; the same token writes again; a higher one raises the fence', async () => {
    await orders.insertOne({ _id: 'o1' as never, total: 'from 5', fencingToken: 5n })
    const write = async (total: string, token: bigint) => {
      const result = await orders.updateOne(
        { _id: 'o1' as never, ...fenceFilter(token) },
        fencedUpdate({ $set: { total } }, token),
      )
      return result.matchedCount === 1
    }
    expect(await write('stale', 4n)).toBe(false)
    expect(await stored('o1')).toEqual({ _id: 'o1', total: 'from 5', fencingToken: 5n })
    expect(await write('again 5', 5n)).toBe(true)
    expect(await write('again 5', 5n)).toBe(true)
    expect(await stored('o1')).toEqual({ _id: 'o1', total: 'again 5', fencingToken: 5n })
    expect(await write('from 6', 6n)).toBe(true)
    expect(await stored('o1')).toEqual({ _id: 'o1', total: 'from 6', fencingToken: 6n })
    expect(await write('stale 5', 5n)).toBe(false)
    expect(await stored('o1')).toEqual({ _id: 'o1', total: 'from 6', fencingToken: 6n })
  })

  test('shapes: the filter and the update the helpers produce', () => {
    expect(fenceFilter(3n)).toEqual({ $or: [{ fencingToken: { $lte: 3n } }, { fencingToken: null }] })
    expect(fencedUpdate({ $set: { a: 1 }, $inc: { n: 1 } }, 3n, { field: 'lease.token' })).toEqual({
      $set: { a: 1, 'lease.token': 3n },
      $inc: { n: 1 },
    })
  })

  test('bad input is refused before any command: tokens, replacement documents, pipelines, fields', async () => {
    const { collection, commands } = open()
    for (const token of [0n, -1n, MAX_FENCING_TOKEN + 1n, 5 as unknown as bigint]) {
      expect(() => fenceFilter(token)).toThrow(/token must be a bigint/)
      expect(await code(fencedUpdateOne(collection, { _id: 'o1' }, { $set: {} }, token))).toBe(
        'INVALID_ARGUMENT',
      )
    }
    expect(() => fencedUpdate({ total: 1 }, 1n)).toThrow(/update operators/)
    expect(() => fencedUpdate([{ $set: { a: 1 } }] as never, 1n)).toThrow(/pipeline/)
    expect(() => fenceFilter(1n, { field: '$or' })).toThrow(/field/)
    // U+0000 ends a BSON key: the server (or the driver) would refuse it after the check passed.
    expect(() => fenceFilter(1n, { field: 'fence\u0000x' })).toThrow(/field/)
    // Every update operator takes a document; the server refused these only after a round trip.
    for (const update of [{ $inc: 'total' }, { $unset: 5 }, { $set: null }]) {
      expect(await code(fencedUpdateOne(collection, { _id: 'o1' }, update as never, 1n))).toBe(
        'INVALID_ARGUMENT',
      )
    }
    // An operator left undefined is absent, as the driver reads it: the fence's own $set stands.
    expect(fencedUpdate({ $set: undefined, $inc: { n: 1 } } as never, 3n)).toEqual({
      $inc: { n: 1 },
      $set: { fencingToken: 3n },
    })
    // Other operators on the fence field, a path in it or its parent: the server would refuse the
    // command (a path conflict) after a round trip.
    for (const [update, field] of [
      [{ $inc: { fencingToken: -100 } }, undefined],
      [{ $unset: { fencingToken: '' } }, undefined],
      [{ $set: { 'fencingToken.x': 1 } }, undefined],
      [{ $set: { lease: {} } }, 'lease.token'],
      // $rename names a path in its values too: renaming onto the fence field overwrites it.
      [{ $rename: { total: 'fencingToken' } }, undefined],
      [{ $rename: { total: 'lease.token.x' } }, 'lease.token'],
    ] as const) {
      const options = field === undefined ? {} : { field }
      expect(await code(fencedUpdateOne(collection, { _id: 'o1' }, update as never, 1n, options))).toBe(
        'INVALID_ARGUMENT',
      )
    }
    const throwing = Object.defineProperty({}, 'field', {
      get() {
        throw new Error('boom')
      },
    })
    expect(() => fenceFilter(1n, throwing as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
    // Found by a review (session 50): paths with an empty part or an operator part passed the check,
    // and the server refused them after the round trip; an unacknowledged write concern made a write
    // that landed read as FENCED.
    for (const field of ['x.', '.x', 'a..b', 'a.$b']) {
      expect(
        await code(fencedUpdateOne(collection, { _id: 'o1' }, { $set: { total: 1 } }, 1n, { field })),
      ).toBe('INVALID_ARGUMENT')
    }
    // Review of the fix: '0' (the driver takes Number(w)) and the older top-level w passed.
    for (const options of [{ writeConcern: { w: 0 } }, { writeConcern: { w: '0' } }, { w: 0 }, { w: '0' }]) {
      expect(
        await code(fencedUpdateOne(collection, { _id: 'o1' }, { $set: { total: 1 } }, 1n, options)),
      ).toBe('INVALID_ARGUMENT')
    }
    expect(commands()).toEqual([])
  })

  test('an unacknowledged write (w: 0 on the collection) is no lease outcome: not FENCED, an error', async () => {
    // A client of its own: FerretDB answers an unacknowledged write all the same, and the answer
    // would be read as the reply to the client's next command.
    const client = new MongoClient(url)
    clients.push(client)
    const unacknowledged = client.db(TEST_DATABASE).collection(name, { writeConcern: { w: 0 } })
    const error = await fencedUpdateOneOrThrow(unacknowledged, { _id: 'o1' }, { $set: { total: 42 } }, 5n, {
      upsert: true,
    }).then(
      () => undefined,
      (reason: unknown) => reason,
    )
    expect(isWorkleaseError(error)).toBe(false)
    expect(error).toMatchObject({ message: expect.stringMatching(/not acknowledged/) })
  })
})

describe('fencedUpdateOne', () => {
  test('one command; a missing or null fence field accepts any token; a missing document is not created without upsert', async () => {
    await orders.insertMany([
      { _id: 'legacy' as never, total: 'old' },
      { _id: 'nulled' as never, total: 'old', fencingToken: null },
    ])
    const { collection, commands } = open()
    expect(await fencedUpdateOne(collection, { _id: 'legacy' }, { $set: { total: 'from 2' } }, 2n)).toBe(true)
    expect(commands()).toEqual(['update'])
    expect(await fencedUpdateOne(collection, { _id: 'nulled' }, { $set: { total: 'from 2' } }, 2n)).toBe(true)
    expect(await stored('legacy')).toEqual({ _id: 'legacy', total: 'from 2', fencingToken: 2n })
    expect(await stored('nulled')).toEqual({ _id: 'nulled', total: 'from 2', fencingToken: 2n })
    expect(await fencedUpdateOne(collection, { _id: 'missing' }, { $set: { total: 'x' } }, 2n)).toBe(false)
    expect(await stored('missing')).toBeNull()
  })

  test("a signal that fires before or while the update is out rejects with its reason (MongoDB's client does)", async () => {
    // Passed `lease.signal`, an update abandoned on loss rejects with the lease's LeaseLostError.
    const { collection } = open()
    const reason = new Error('lease lost')
    const update = { $set: { total: 'late' } }
    await expect(
      fencedUpdateOne(collection, { _id: 'o1' }, update, 2n, {
        upsert: true,
        signal: AbortSignal.abort(reason),
      }),
    ).rejects.toBe(reason)
    const controller = new AbortController()
    const pending = fencedUpdateOne(collection, { _id: 'o1' }, update, 2n, {
      upsert: true,
      signal: controller.signal,
    })
    controller.abort(reason)
    await expect(pending).rejects.toBe(reason)
  })

  test('upsert: inserts, refuses a stale token (nothing changes), accepts the same and higher tokens', async () => {
    const { collection } = open()
    const write = (total: string, token: bigint) =>
      fencedUpdateOne(collection, { _id: 'o1' }, { $set: { total } }, token, { upsert: true })
    expect(await write('from 5', 5n)).toBe(true)
    expect(await stored('o1')).toEqual({ _id: 'o1', total: 'from 5', fencingToken: 5n })
    expect(await write('stale', 4n)).toBe(false)
    expect(await stored('o1')).toEqual({ _id: 'o1', total: 'from 5', fencingToken: 5n })
    expect(await write('again 5', 5n)).toBe(true)
    expect(await write('from 9', 9n)).toBe(true)
    expect(await stored('o1')).toEqual({ _id: 'o1', total: 'from 9', fencingToken: 9n })
    expect(await code(fencedUpdateOneOrThrow(collection, { _id: 'o1' }, { $set: { total: 'x' } }, 8n))).toBe(
      'FENCED',
    )
    expect(await code(fencedUpdateOneOrThrow(collection, { _id: 'o1' }, { $set: { total: 'y' } }, 9n))).toBe(
      'ok',
    )
  })

  test('a filter with its own $or and $and keeps its meaning (the fence joins the $and); the field is configurable', async () => {
    await orders.insertMany([
      { _id: 'a' as never, kind: 'x', status: 'open', lease: { token: 3n } },
      { _id: 'b' as never, kind: 'y', status: 'open', lease: { token: 3n } },
    ])
    const filter = { $or: [{ kind: 'x' }, { kind: 'z' }], $and: [{ status: 'open' }] }
    const options = { field: 'lease.token' }
    expect(await fencedUpdateOne(orders, filter, { $set: { status: 'paid' } }, 2n, options)).toBe(false)
    expect(await fencedUpdateOne(orders, filter, { $set: { status: 'paid' } }, 3n, options)).toBe(true)
    expect(await orders.find({}, READ).sort({ _id: 1 }).toArray()).toEqual([
      { _id: 'a', kind: 'x', status: 'paid', lease: { token: 3n } },
      { _id: 'b', kind: 'y', status: 'open', lease: { token: 3n } },
    ])
  })

  test('a duplicate key on another unique index is the caller’s own error and propagates (MongoDB)', async () => {
    await orders.createIndex({ email: 1 }, { unique: true })
    await orders.insertOne({ _id: 'taken' as never, email: 'a@example.com' })
    const outcome = await fencedUpdateOne(orders, { _id: 'o1' }, { $set: { email: 'a@example.com' } }, 1n, {
      upsert: true,
    }).catch((caught: unknown) => caught)
    // FerretDB (1.24 and 2.7 alike) names no index (no keyPattern) in its duplicate-key error, so the
    // helper cannot tell the caller's constraint from the fence and reports the write as not landed.
    if (ferretdbVersion) expect(outcome).toBe(false)
    else expect((outcome as { code?: unknown }).code).toBe(11000)
    expect(await stored('o1')).toBeNull()
  })

  // FerretDB 1.x builds an upsert's new document from the top-level equalities only: it inserts one with
  // a generated _id instead (the docs ask for the unique key at the top level).
  const AND_ID_NOTE = 'FerretDB 1.x takes no _id from $and into an upserted document'
  // Printed at load too: the reporter shows a skipped test's title (and its reason) only when verbose.
  if (ferretdb1) console.warn(`worklease mongodb tests: skipping the $and upsert case: ${AND_ID_NOTE}`)
  test.skipIf(ferretdb1)(
    `an upsert whose _id is in the filter’s $and: a newer document makes a stale token false, not an error${
      ferretdb1 ? ` (skipped: ${AND_ID_NOTE})` : ''
    }`,
    async () => {
      await orders.insertOne({ _id: 'o' as never, total: 'from 9', fencingToken: 9n })
      // MongoDB takes the upsert's _id from the $and too, and its duplicate key names {_id: 1}: the fence
      // refusing the write, as with a top-level _id. (FerretDB names no index: false either way.)
      const outcome = await fencedUpdateOne(
        orders,
        { $and: [{ _id: 'o' }] },
        { $set: { total: 'stale 3' } },
        3n,
        {
          upsert: true,
        },
      ).catch((caught: unknown) => caught)
      expect(outcome).toBe(false)
      expect(await stored('o')).toEqual({ _id: 'o', total: 'from 9', fencingToken: 9n })
    },
  )

  test('an upsert fences only through a unique index on its filter: without one, a stale token inserts a duplicate', async () => {
    await orders.createIndex({ orderId: 1 }, { unique: true })
    await orders.insertOne({ orderId: 7, total: 'from 9', fencingToken: 9n })
    const staleUpsert = () =>
      fencedUpdateOne(orders, { orderId: 7 }, { $set: { total: 'stale 3' } }, 3n, { upsert: true })
    const documents = () => orders.find({}, { ...READ, projection: { _id: 0 } }).toArray()
    // The fence excludes the newer document, so the upsert inserts; the unique index refuses that.
    expect(await staleUpsert()).toBe(false)
    expect(await documents()).toEqual([{ orderId: 7, total: 'from 9', fencingToken: 9n }])
    // The same call without the index: nothing refuses the insert. This is what the docs warn about.
    await orders.dropIndex('orderId_1')
    expect(await staleUpsert()).toBe(true)
    expect(
      await orders
        .find({}, { ...READ, projection: { _id: 0 } })
        .sort({ fencingToken: 1 })
        .toArray(),
    ).toEqual([
      { orderId: 7, total: 'stale 3', fencingToken: 3n },
      { orderId: 7, total: 'from 9', fencingToken: 9n },
    ])
  })

  test('a filter that is not a document, or whose $and is not an array, is refused before any command', async () => {
    await orders.insertOne({ _id: 'o1' as never, status: 'closed', total: 'x' })
    const { collection, commands } = open()
    const filters: unknown[] = [
      { _id: 'o1', $and: { status: 'open' } },
      { _id: 'o1', $and: null },
      { _id: 'o1', $and: 'status' },
      null,
      'o1',
      [{ _id: 'o1' }],
    ]
    for (const filter of filters) {
      const outcome = fencedUpdateOne(collection, filter as never, { $set: { total: 'y' } }, 3n, {
        upsert: true,
      })
      expect(await code(outcome)).toBe('INVALID_ARGUMENT')
    }
    expect(commands()).toEqual([])
    expect(await stored('o1')).toEqual({ _id: 'o1', status: 'closed', total: 'x' })
  })

  test('filter, update and options are read once each: a getter or Proxy is never asked twice', async () => {
    await orders.insertOne({ _id: 'o1' as never, status: 'open', total: 'from 9', fencingToken: 9n })
    const reads: string[] = []
    // Records every property read and key listing; a second read of anything is a second answer.
    const recorded = <T extends object>(name: string, target: T): T =>
      new Proxy(target, {
        get(object, key, receiver) {
          reads.push(`${name}.${String(key)}`)
          return Reflect.get(object, key, receiver)
        },
        has(object, key) {
          reads.push(`${name} has ${String(key)}`)
          return Reflect.has(object, key)
        },
        ownKeys(object) {
          reads.push(`${name} keys`)
          return Reflect.ownKeys(object)
        },
      })
    const filter = recorded('filter', { _id: 'o1', $and: [{ status: 'open' }] })
    const update = recorded('update', { $set: { total: 'stale 3' } })
    const options = recorded('options', { field: 'fencingToken', upsert: true })
    const readAgain = () => reads.splice(0).filter((read, i, all) => all.indexOf(read) !== i)
    // A stale upsert (the duplicate-key path looks at the filter's keys too), then one that lands.
    expect(await fencedUpdateOne(orders, filter, update, 3n, options)).toBe(false)
    expect(readAgain()).toEqual([])
    expect(await fencedUpdateOne(orders, filter, update, 9n, options)).toBe(true)
    expect(readAgain()).toEqual([])
    expect(await stored('o1')).toEqual({ _id: 'o1', status: 'open', total: 'stale 3', fencingToken: 9n })
  })

  test('a throwing getter in the filter, the update or the options is InvalidArgumentError before any command', async () => {
    const { collection, commands } = open()
    const throwing = (document: object, key: string) =>
      Object.defineProperty({ ...document }, key, {
        enumerable: true,
        get() {
          throw new Error('getter')
        },
      })
    const calls = [
      () => fencedUpdateOne(collection, throwing({ _id: 'o1' }, '$and'), { $set: { a: 1 } }, 3n),
      () => fencedUpdateOne(collection, { _id: 'o1' }, throwing({}, '$set'), 3n),
      () => fencedUpdateOne(collection, { _id: 'o1' }, { $set: throwing({}, 'a') }, 3n),
      () => fencedUpdateOne(collection, { _id: 'o1' }, { $set: { a: 1 } }, 3n, throwing({}, 'upsert')),
      () => fencedUpdateOne(collection, { _id: 'o1' }, { $set: { a: 1 } }, 3n, throwing({}, 'session')),
    ]
    for (const call of calls) expect(await code(call())).toBe('INVALID_ARGUMENT')
    expect(() => fencedUpdate(throwing({}, '$inc'), 3n)).toThrow(/update/)
    expect(commands()).toEqual([])
  })

  test('tokens above 2^53 and up to 2^63-1 compare exactly as int64', async () => {
    await orders.insertOne({ _id: 'o1' as never, total: 'high', fencingToken: TWO_POW_53 + 1n })
    const write = (total: string, token: bigint, id = 'o1') =>
      fencedUpdateOne(orders, { _id: id }, { $set: { total } }, token, { upsert: true })
    // As doubles, 2^53 and 2^53 + 1 are equal: a lossy comparison would let this stale write through.
    expect(await write('stale', TWO_POW_53)).toBe(false)
    expect(await stored('o1')).toEqual({ _id: 'o1', total: 'high', fencingToken: TWO_POW_53 + 1n })
    expect(await write('higher', TWO_POW_53 + 2n)).toBe(true)
    expect(await stored('o1')).toEqual({ _id: 'o1', total: 'higher', fencingToken: TWO_POW_53 + 2n })
    expect(await write('max-1', MAX_FENCING_TOKEN - 1n, 'o2')).toBe(true)
    expect(await write('max', MAX_FENCING_TOKEN, 'o2')).toBe(true)
    expect(await write('stale', MAX_FENCING_TOKEN - 1n, 'o2')).toBe(false)
    expect(await stored('o2')).toEqual({ _id: 'o2', total: 'max', fencingToken: MAX_FENCING_TOKEN })
  })

  // FerretDB 1.x runs an update as a read followed by a write by _id, so two fenced writes from separate
  // connections can interleave between the check and the write: the fence would be judged on a stale
  // read. The sequential cases above hold there; this one needs a server with atomic document writes.
  test.skipIf(ferretdb1)(
    `concurrent writers with different tokens: the highest token ends as the value and the fence${
      ferretdb1 ? ` (skipped: ${FERRETDB_NOTE})` : ''
    }`,
    async () => {
      const tokens = [3n, 9n, 1n, 7n, 5n, 8n, 2n, 6n, 4n]
      const writers = tokens.map(() => open().collection)
      await orders.insertOne({ _id: 'existing' as never, total: 'start' })
      const landed = await Promise.all(
        tokens.map(async (token, i) => [
          await fencedUpdateOne(
            writers[i]!,
            { _id: 'existing' },
            { $set: { total: `from ${token}` } },
            token,
          ),
          // A new document: the first writers race to insert it, the losers' duplicate keys retry once.
          await fencedUpdateOne(writers[i]!, { _id: 'new' }, { $set: { total: `from ${token}` } }, token, {
            upsert: true,
          }),
        ]),
      )
      for (const id of ['existing', 'new']) {
        expect(await stored(id)).toEqual({ _id: id, total: 'from 9', fencingToken: 9n })
      }
      expect(landed[tokens.indexOf(9n)]).toEqual([true, true])
    },
  )
})
