import {
  type AttributeValue,
  DescribeTableCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb'
import {
  type Clock,
  createLeaseRecord,
  isLeaseHeldError,
  isTokensExhaustedError,
  isWorkleaseError,
  type LeaseHeldError,
  MAX_FENCING_TOKEN,
} from '@worklease/spec'
import { afterEach, beforeEach, describe, expect, inject, test } from 'vitest'
import { createLeaseTable, DynamoBackend, type DynamoClient, sendFenced } from '../src/index.js'
import {
  createTestTable,
  type DynamoTestTable,
  newClient,
  returnValuesOnConditionCheckFailure,
} from './dynamo-harness.js'

const T0 = 1_700_000_000_000
const manualClock = (start = T0): Clock & { now(): number; advance(ms: number): void } => {
  let now = start
  return {
    now: () => now,
    advance: (ms) => {
      now += ms
    },
  }
}
const bytes = (text: string) => new TextEncoder().encode(text)
const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve))
const record = (workId: string) => createLeaseRecord(workId, 'a', 1n, T0 + 10_000)
const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (error: unknown) => (isWorkleaseError(error) ? error.code : error),
  )

let table: DynamoTestTable
beforeEach(async () => {
  table = await createTestTable()
})
afterEach(() => table.close())

describe('DynamoBackend on a real server', () => {
  test('a new workId starts at token 1 with a clean handoff and no state', async () => {
    const clock = manualClock()
    const backend = table.open({ clock })
    const record = await backend.acquire('job-1', 'a', 10_000)
    expect(record).toMatchObject({ workId: 'job-1', holderId: 'a', fencingToken: 1n })
    expect(record.expiresAt.getTime()).toBe(T0 + 10_000)
    expect(await backend.readCheckpoint(record)).toEqual({ state: null, cleanHandoff: true })
  })

  test('a signal that fires while the SDK still resolves credentials rejects at once with its reason, in the helpers too', async () => {
    // The SDK looks at its abortSignal only once the request reaches the HTTP handler: a first call
    // that waits for credentials (a provider that reads a file or asks a metadata service) would
    // otherwise wait for them before it hears the abort.
    let resolveCredentials = () => {}
    const credentials = new Promise<{ accessKeyId: string; secretAccessKey: string }>((resolve) => {
      resolveCredentials = () => resolve({ accessKeyId: 'worklease', secretAccessKey: 'worklease' })
    })
    const client = newClient({ credentials: () => credentials })
    const backend = new DynamoBackend({ client, table: table.tableName })
    const calls: Array<[string, (signal: AbortSignal) => Promise<unknown>]> = [
      ['acquire', (signal) => backend.acquire('job-1', 'a', 10_000, { signal })],
      ['readCheckpoint', (signal) => backend.readCheckpoint(record('job-1'), { signal })],
      ['release', (signal) => backend.release(record('job-1'), { signal })],
      // The package's helpers send through the caller's client the same way.
      [
        'sendFenced',
        (abortSignal) =>
          sendFenced(client, { TableName: table.tableName, Item: { workId: { S: 'x' } } }, 1n, {
            abortSignal,
          }),
      ],
      ['createLeaseTable', (signal) => createLeaseTable(client, { table: `${table.tableName}-2`, signal })],
    ]
    try {
      for (const [name, call] of calls) {
        const controller = new AbortController()
        const reason = new Error(`${name} given up`)
        let settled: unknown = 'waiting'
        const pending = call(controller.signal).then(
          () => (settled = 'answered'),
          (error: unknown) => (settled = error),
        )
        controller.abort(reason)
        for (let tick = 0; tick < 64 && settled === 'waiting'; tick++) await nextTick()
        expect(settled, name).toBe(reason)
        await pending
      }
    } finally {
      resolveCredentials()
      client.destroy()
    }
  })

  test('a held lease is refused to everyone, including its own holder', async () => {
    const backend = table.open({ clock: manualClock() })
    await backend.acquire('job-1', 'a', 10_000)
    expect(await code(backend.acquire('job-1', 'b', 10_000))).toBe('LEASE_HELD')
    expect(await code(backend.acquire('job-1', 'a', 10_000))).toBe('LEASE_HELD')
  })

  test('an expired lease is taken over: token + 1, crashed handoff, state kept, old holder fenced', async () => {
    const clockA = manualClock()
    const clockB = manualClock()
    const a = table.open({ clock: clockA })
    const b = table.open({ clock: clockB })
    const first = await a.acquire('job-1', 'a', 1_000)
    await a.checkpoint(first, bytes('step 1'), 1_000)
    clockB.advance(1_000) // expiresAt <= now: free
    const second = await b.acquire('job-1', 'b', 5_000)
    expect(second.fencingToken).toBe(2n)
    expect(await b.readCheckpoint(second)).toEqual({ state: bytes('step 1'), cleanHandoff: false })
    expect(await code(a.renew(first, 1_000))).toBe('FENCED')
    expect(await code(a.checkpoint(first, bytes('late'), 1_000))).toBe('FENCED')
    expect(await code(a.release(first))).toBe('FENCED')
    expect(await code(a.readCheckpoint(first))).toBe('FENCED')
    expect((await b.readCheckpoint(second)).state).toEqual(bytes('step 1'))
  })

  test('renew of an expired lease nobody took is LEASE_EXPIRED; checkpoint still lands and revives it', async () => {
    const clock = manualClock()
    const backend = table.open({ clock })
    const record = await backend.acquire('job-1', 'a', 1_000)
    clock.advance(1_000)
    expect(await code(backend.renew(record, 1_000))).toBe('LEASE_EXPIRED')
    await backend.checkpoint(record, bytes('late but valid'), 1_000)
    await backend.renew(record, 1_000)
    expect(await code(table.open({ clock }).acquire('job-1', 'b', 1_000))).toBe('LEASE_HELD')
  })

  test('renew of a record of another workId, holder or token is FENCED', async () => {
    const backend = table.open({ clock: manualClock() })
    const record = await backend.acquire('job-1', 'a', 1_000)
    await backend.acquire('job-2', 'a', 1_000)
    expect(await code(backend.renew({ ...record, holderId: 'b' }, 1_000))).toBe('FENCED')
    expect(await code(backend.renew({ ...record, fencingToken: 2n }, 1_000))).toBe('FENCED')
    expect(await code(backend.renew({ ...record, workId: 'job-3' }, 1_000))).toBe('FENCED')
    await backend.renew(record, 1_000)
  })

  test('release frees at once, also for a process whose clock is behind, and the handoff is clean', async () => {
    const clockA = manualClock(T0 + 60_000)
    const clockB = manualClock(T0) // a minute behind A
    const a = table.open({ clock: clockA })
    const b = table.open({ clock: clockB })
    const first = await a.acquire('job-1', 'a', 10_000)
    await a.release(first)
    expect(await code(a.release(first))).toBe('FENCED')
    expect(await code(a.readCheckpoint(first))).toBe('FENCED')
    const second = await b.acquire('job-1', 'b', 10_000)
    expect(second.fencingToken).toBe(2n)
    expect(await b.readCheckpoint(second)).toEqual({ state: null, cleanHandoff: true })
  })

  test('binary state round-trips byte for byte, including an empty state', async () => {
    const backend = table.open({ clock: manualClock() })
    const record = await backend.acquire('job-1', 'a', 10_000)
    const all = Uint8Array.from({ length: 256 }, (_, i) => i)
    await backend.checkpoint(record, all, 10_000)
    expect((await backend.readCheckpoint(record)).state).toEqual(all)
    await backend.checkpoint(record, new Uint8Array(0), 10_000)
    expect((await backend.readCheckpoint(record)).state).toEqual(new Uint8Array(0))
  })

  test('the state is copied when checkpoint is called: reusing the buffer afterwards changes nothing', async () => {
    const backend = table.open({ clock: manualClock() })
    const record = await backend.acquire('job-1', 'a', 10_000)
    const buffer = bytes('first')
    const pending = backend.checkpoint(record, buffer, 10_000)
    buffer.fill(0)
    await pending
    expect((await backend.readCheckpoint(record)).state).toEqual(bytes('first'))
  })

  test('a state of maxStateBytes is accepted by the server with ids of the largest UTF-8 size', async () => {
    const backend = table.open({ clock: manualClock() })
    const { maxStateBytes } = backend.capabilities
    expect(maxStateBytes).toBe(DynamoBackend.stateBytesLimit())
    expect(maxStateBytes).toBeGreaterThan(395 * 1024)
    // U+4E00 is 3 bytes of UTF-8 in 1 UTF-16 code unit: the most bytes an id can have.
    const workId = '一'.repeat(255)
    const holderId = '丁'.repeat(255)
    const first = await backend.acquire(workId, holderId, 10_000)
    const state = Uint8Array.from({ length: maxStateBytes }, (_, i) => (i * 31) & 0xff)
    await backend.checkpoint(first, state, 10_000)
    // Tokens of the largest size too (19 digits), on an item that already holds the largest state.
    await table.admin.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: {
          workId: { S: workId },
          fencingToken: { N: String(MAX_FENCING_TOKEN - 1n) },
          holderId: { S: holderId },
          expiresAt: { N: String(T0 - 1) },
          released: { BOOL: false },
          cleanHandoff: { BOOL: true },
          state: { B: state },
        },
      }),
    )
    const last = await backend.acquire(workId, holderId, 10_000)
    expect(last.fencingToken).toBe(MAX_FENCING_TOKEN)
    await backend.checkpoint(last, state, 10_000)
    expect((await backend.readCheckpoint(last)).state).toEqual(state)
    // The server does enforce the limit: a state of 400 KB alone makes the item too large.
    await expect(
      table.admin.send(
        new PutItemCommand({
          TableName: table.tableName,
          Item: { workId: { S: 'too-big' }, state: { B: new Uint8Array(400 * 1024) } },
        }),
      ),
    ).rejects.toThrow(/size/)
  })

  test('one byte more than maxStateBytes is INVALID_ARGUMENT before any request', async () => {
    const backend = table.open({ clock: manualClock() })
    const record = await backend.acquire('job-1', 'a', 10_000)
    const before = table.roundTrips()
    const tooBig = new Uint8Array(backend.capabilities.maxStateBytes + 1)
    expect(await code(backend.checkpoint(record, tooBig, 10_000))).toBe('INVALID_ARGUMENT')
    expect(table.roundTrips()).toBe(before)
  })

  test('tokens near 2^63 come back exact, and match exactly in conditions', async () => {
    await table.admin.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: {
          workId: { S: 'job-1' },
          fencingToken: { N: String(MAX_FENCING_TOKEN - 1n) },
          holderId: { S: 'old' },
          expiresAt: { N: '0' },
          released: { BOOL: true },
          cleanHandoff: { BOOL: true },
        },
      }),
    )
    const backend = table.open({ clock: manualClock() })
    const record = await backend.acquire('job-1', 'a', 10_000)
    expect(record.fencingToken).toBe(MAX_FENCING_TOKEN)
    // 2^63 - 2 and 2^63 - 1 are the same JavaScript number: a lossy path would accept this one.
    expect(Number(MAX_FENCING_TOKEN - 1n)).toBe(Number(MAX_FENCING_TOKEN))
    expect(await code(backend.renew({ ...record, fencingToken: MAX_FENCING_TOKEN - 1n }, 10_000))).toBe(
      'FENCED',
    )
    await backend.renew(record, 10_000)
    const { Item } = await table.admin.send(
      new GetItemCommand({
        TableName: table.tableName,
        Key: { workId: { S: 'job-1' } },
        ConsistentRead: true,
      }),
    )
    expect(Item?.fencingToken?.N).toBe('9223372036854775807')
  })

  test('every happy-path operation is one request; rejected input is none; a failed renew at most two', async () => {
    const clock = manualClock()
    const backend = table.open({ clock })
    const steps: Array<[string, () => Promise<unknown>]> = []
    let record = await backend.acquire('job-0', 'a', 1_000)
    expect(table.roundTrips()).toBe(1)
    steps.push(
      ['acquire', async () => (record = await backend.acquire('job-1', 'a', 1_000))],
      ['renew', () => backend.renew(record, 1_000)],
      ['checkpoint', () => backend.checkpoint(record, bytes('x'), 1_000)],
      ['readCheckpoint', () => backend.readCheckpoint(record)],
      ['release', () => backend.release(record)],
    )
    for (const [name, step] of steps) {
      const before = table.roundTrips()
      await step()
      expect(table.roundTrips() - before, name).toBe(1)
    }
    const before = table.roundTrips()
    expect(await code(backend.acquire('', 'a', 1_000))).toBe('INVALID_ARGUMENT')
    expect(await code(backend.renew(record, 0))).toBe('INVALID_ARGUMENT')
    expect(await code(backend.release({ ...record, fencingToken: 0n }))).toBe('INVALID_ARGUMENT')
    const aborted = AbortSignal.abort(new Error('stop'))
    await expect(backend.readCheckpoint(record, { signal: aborted })).rejects.toThrow('stop')
    expect(table.roundTrips()).toBe(before)

    const held = await backend.acquire('job-2', 'a', 1_000)
    clock.advance(1_000)
    const failed = table.roundTrips()
    expect(await code(backend.renew(held, 1_000))).toBe('LEASE_EXPIRED')
    // One request where the server returns the item with the failed condition, else one more read.
    expect(table.roundTrips() - failed).toBe(returnValuesOnConditionCheckFailure() ? 1 : 2)
  })

  test('asking for the item on a failed condition stays correct on a server that ignores it', async () => {
    const clock = manualClock()
    const backend = table.open({ clock }, { returnValuesOnConditionCheckFailure: true })
    const record = await backend.acquire('job-1', 'a', 1_000)
    clock.advance(1_000)
    expect(await code(backend.renew(record, 1_000))).toBe('LEASE_EXPIRED')
    expect(await code(backend.renew({ ...record, holderId: 'b' }, 1_000))).toBe('FENCED')
    expect(await code(backend.renew({ ...record, workId: 'job-2' }, 1_000))).toBe('FENCED')
  })

  for (const itemOnFailure of [true, false]) {
    test(`renewMany names each refusal ${itemOnFailure ? 'from the failed statements' : 'with one BatchGetItem'}`, async (context) => {
      const clock = manualClock()
      const backend = table.open({ clock }, { returnValuesOnConditionCheckFailure: itemOnFailure })
      // The harness turns renewMany off where the server has no PartiQL; the capability decides.
      if (!backend.capabilities.renewMany) {
        return context.skip('the backend declares no renewMany (dynalite has no PartiQL)')
      }
      const held = await backend.acquire('held', 'a', 1_000)
      const expiring = await backend.acquire('expiring', 'a', 500)
      const released = await backend.acquire('released', 'a', 1_000)
      await backend.release(released)
      clock.advance(600)
      const before = table.roundTrips()
      const outcomes = await backend.renewMany!(
        [held, expiring, released, { ...held, workId: 'never' }],
        1_000,
      )
      expect(outcomes).toEqual(['renewed', 'expired', 'fenced', 'fenced'])
      expect(table.requests().BatchExecuteStatementCommand).toBe(1)
      expect(table.roundTrips() - before).toBe(itemOnFailure ? 1 : 2)
    })
  }

  test('a lease released between the refused write and the read is reported, expiring in 0 ms', async () => {
    const clock = manualClock()
    const holder = table.open({ clock })
    const record = await holder.acquire('job-1', 'a', 10_000)
    // The read that names the refusal goes out after the holder's release has landed.
    const sdk = newClient()
    const client: DynamoClient = {
      async send(command, options) {
        if (command instanceof GetItemCommand) await holder.release(record)
        return sdk.send(command, options)
      },
    }
    const successor = table.open({ clock }, { client, returnValuesOnConditionCheckFailure: false })
    const error = await successor.acquire('job-1', 'b', 10_000).catch((e: unknown) => e)
    expect(isLeaseHeldError(error)).toBe(true)
    // The lease that refused it, expiring in 0 ms: a waiter tries again at once, not after a backoff.
    expect((error as LeaseHeldError).holder).toMatchObject({
      holderId: 'a',
      fencingToken: 1n,
      expiresInMs: 0,
    })
    expect((await successor.acquire('job-1', 'b', 10_000)).fencingToken).toBe(2n)
    sdk.destroy()
  })

  test('50 concurrent acquires from 50 clients: exactly one winner', async () => {
    const backends = Array.from({ length: 50 }, () => table.open({ clock: manualClock() }))
    const outcomes = await Promise.all(
      backends.map((backend, i) => code(backend.acquire('job-1', `h${i}`, 60_000))),
    )
    expect(outcomes.filter((outcome) => outcome === 'ok')).toHaveLength(1)
    expect(outcomes.filter((outcome) => outcome === 'LEASE_HELD')).toHaveLength(49)
  })

  test('store failures propagate as the SDK threw them', async () => {
    const backend = table.open({ clock: manualClock() }, { table: 'worklease-no-such-table' })
    const error = await backend.acquire('job-1', 'a', 1_000).catch((e: unknown) => e)
    expect(isWorkleaseError(error)).toBe(false)
    expect((error as Error).name).toBe('ResourceNotFoundException')
  })

  /** Writes job-1 by hand: a's live lease at token 1, with `fields` changed or added. */
  const writeLiveLease = (fields: Record<string, AttributeValue>) =>
    table.admin.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: {
          workId: { S: 'job-1' },
          fencingToken: { N: '1' },
          holderId: { S: 'a' },
          expiresAt: { N: String(T0 + 60_000) },
          released: { BOOL: false },
          cleanHandoff: { BOOL: true },
          listKey: { S: 'lease' },
          ...fields,
        },
      }),
    )

  // Found by a review (session 40): the sequence failed `#cseq < :seq` as a string, and the failure
  // was read as "a later checkpoint stored already": every checkpoint of the lease resolved, storing
  // nothing.
  test('an item whose checkpointSequence is no number is a store failure for checkpoint, not a no-op', async () => {
    const backend = table.open({ clock: manualClock() })
    await writeLiveLease({
      state: { B: Uint8Array.of(9) },
      checkpointToken: { N: '1' },
      checkpointSequence: { S: '1' },
    })
    const error = await backend.checkpoint(record('job-1'), Uint8Array.of(1), 10_000).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect(isWorkleaseError(error)).toBe(false)
  })

  test('an item whose expiresAt is no number is a store failure for renew and acquire, its own loss in renewMany', async () => {
    const clock = manualClock()
    const backend = table.open({ clock })
    await writeLiveLease({ expiresAt: { S: String(T0 + 60_000) } })
    // Every expiry condition compares a number with a string and fails: only the item the failure
    // brings back (or one read) is left to name the outcome, and an expiry that is no number names none.
    const calls: (() => Promise<unknown>)[] = [
      () => backend.renew(record('job-1'), 10_000),
      () => backend.acquire('job-1', 'b', 10_000),
    ]
    for (const call of calls) {
      const error = await call().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(TypeError)
      expect(isWorkleaseError(error)).toBe(false)
    }
    // In a batch it costs its own lease only: thrown, it failed the batch whose other renewals landed.
    if (backend.capabilities.renewMany) {
      const good = await backend.acquire('job-2', 'a', 10_000)
      clock.advance(1_000)
      expect(await backend.renewMany!([record('job-1'), good], 10_000)).toEqual(['expired', 'renewed'])
    }
  })

  // Found by a review (session 37): a free item whose token was a string refused the acquire's
  // condition, and the read naming the outcome found no number token: LEASE_HELD naming nobody.
  test.each([['a fencingToken stored as a string', { fencingToken: { S: '5' }, holderId: { S: 'a' } }]])(
    'an item with %s is a store failure for acquire, never LEASE_HELD',
    async (_, fields) => {
      const backend = table.open({ clock: manualClock() })
      await table.admin.send(
        new PutItemCommand({
          TableName: table.tableName,
          Item: {
            workId: { S: 'job-1' },
            ...fields,
            expiresAt: { N: '0' },
            released: { BOOL: true },
            cleanHandoff: { BOOL: true },
            listKey: { S: 'lease' },
          },
        }),
      )
      for (const call of [
        () => backend.acquire('job-1', 'b', 10_000),
        () => backend.acquireWithCheckpoint('job-1', 'b', 10_000),
      ]) {
        const error = await call().catch((e: unknown) => e)
        expect(error).toBeInstanceOf(TypeError)
        expect(isWorkleaseError(error)).toBe(false)
      }
    },
  )

  // Found by a review (session 41): acquire called such an item the store failure it is, but the
  // record's own calls read its refused condition as a lease outcome: FENCED, or revoke's false. The
  // holder stopped as if taken over while every acquire threw.
  test.each([
    ['a fencingToken stored as a string', { fencingToken: { S: '1' } }, 'TypeError'],
    ['released stored as a string', { released: { S: 'false' } }, 'TypeError'],
    // Revoke's condition reads no holder's type: it ends what is there, which the next acquire takes.
    ['a holderId that is no string', { holderId: { NULL: true } }, 'resolved true'],
  ] as const)(
    'a live item with %s is a store failure for every call of its record, never a lease outcome',
    async (_, fields, revoked) => {
      const backend = table.open({ clock: manualClock() })
      await writeLiveLease(fields)
      const calls: [string, () => Promise<unknown>][] = [
        ['renew', () => backend.renew(record('job-1'), 10_000)],
        ['checkpoint', () => backend.checkpoint(record('job-1'), Uint8Array.of(1), 10_000)],
        ['readCheckpoint', () => backend.readCheckpoint(record('job-1'))],
        ['release', () => backend.release(record('job-1'))],
        ['revoke at its token', () => backend.revoke('job-1', { fencingToken: 1n })],
      ]
      const outcomes: Record<string, string> = {}
      for (const [name, call] of calls) {
        const outcome = await call().then(
          (value) => `resolved ${String(value)}`,
          (error: unknown) =>
            isWorkleaseError(error) ? (error as { code: string }).code : (error as Error).constructor.name,
        )
        outcomes[name] = outcome
      }
      expect(outcomes).toEqual({
        renew: 'TypeError',
        checkpoint: 'TypeError',
        readCheckpoint: 'TypeError',
        release: 'TypeError',
        // Told from the item a refused revoke's reply carries, and dynalite sends none.
        'revoke at its token':
          revoked === 'TypeError' && !returnValuesOnConditionCheckFailure() ? 'resolved false' : revoked,
      })
    },
  )

  test("the harness's failNextCall fails one request before it is sent, as a reset connection", async () => {
    const backend = table.open({ clock: manualClock() })
    const record = await backend.acquire('job-1', 'a', 10_000)
    const sent = table.roundTrips()
    table.failNextCall!()
    const error = await backend.renew(record, 10_000).catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'TimeoutError', code: 'ECONNRESET' })
    // Never sent: not counted, and the lease is as it was; the failure was one request only.
    expect(table.roundTrips()).toBe(sent)
    await backend.renew(record, 10_000)
    expect(table.roundTrips()).toBe(sent + 1)
  })

  test('a table named by its ARN works, without renewMany: PartiQL takes only a table name', async (context) => {
    if (inject('dynamoIsDynalite')) {
      console.warn(
        '[worklease dynamodb] skipped on dynalite: it takes no table ARN where DynamoDB Local does',
      )
      context.skip()
    }
    const { Table } = await table.admin.send(new DescribeTableCommand({ TableName: table.tableName }))
    const backend = table.open({ clock: manualClock() }, { table: Table!.TableArn!, renewMany: true })
    expect(backend.capabilities.renewMany).toBeUndefined()
    const record = await backend.acquire('job-1', 'a', 10_000)
    await backend.checkpoint(record, bytes('s'), 10_000)
    await backend.renew(record, 10_000)
    await backend.release(record)
    const next = await backend.acquireWithCheckpoint('job-1', 'b', 10_000)
    expect(next.checkpoint).toEqual({ state: bytes('s'), cleanHandoff: true })
  })

  test('options are checked at construction', () => {
    const client = table.admin
    expect(() => new DynamoBackend({ client, table: 'tbl', maxStateBytes: 400 * 1024 })).toThrow(
      /maxStateBytes/,
    )
    expect(() => new DynamoBackend({ client, table: 'tbl', partitionKey: 'state' })).toThrow(/partitionKey/)
    expect(() => new DynamoBackend({ client, table: '' })).toThrow(/table must be/)
    // What DynamoDB would refuse at the first request, and a name that would break renewMany's PartiQL
    // statement out of its quotes, are refused here.
    for (const bad of [
      'ab',
      'a b',
      'leases" SET "x',
      'x'.repeat(256),
      'arn:aws:dynamodb:eu-west-1:1:table/a"b',
    ]) {
      expect(() => new DynamoBackend({ client, table: bad }), bad).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      )
    }
    const arn = 'arn:aws:dynamodb:eu-west-1:123456789012:table/leases'
    expect(new DynamoBackend({ client, table: arn }).capabilities.clock).toBe('client')
    // The option's earlier name is refused by name, not as a missing table.
    expect(() => new DynamoBackend({ client, tableName: 'tbl' } as never)).toThrow(
      /tableName is now options.table/,
    )
    expect(() => new DynamoBackend({ client, table: 'tbl', listIndex: 'a b' })).toThrow(/listIndex/)
    expect(new DynamoBackend({ client, table: 'tbl', maxStateBytes: 1024 }).capabilities).toEqual({
      clock: 'client',
      maxStateBytes: 1024,
      crossConnectionAtomic: true,
      reportsHolder: true,
      acquireWithCheckpoint: true,
      list: false,
      revoke: true,
      renewMany: { maxRecords: 25 },
    })
    expect(new DynamoBackend({ client, table: 'tbl', listIndex: 'idx' }).capabilities.list).toBe(true)
    // Off for a server without PartiQL, and for a partition key PartiQL cannot be given here.
    expect(
      new DynamoBackend({ client, table: 'tbl', renewMany: false }).capabilities.renewMany,
    ).toBeUndefined()
    expect(
      new DynamoBackend({ client, table: 'tbl', partitionKey: 'a"b' }).capabilities.renewMany,
    ).toBeUndefined()
    expect(() => new DynamoBackend({ client, table: 'tbl', renewMany: 'yes' } as never)).toThrow(/renewMany/)
    expect(
      () => new DynamoBackend({ client, table: 'tbl', returnValuesOnConditionCheckFailure: 'no' } as never),
    ).toThrow(/returnValuesOnConditionCheckFailure/)
  })

  test('options are read once: a getter answering twice, or throwing, cannot pass a check it fails', () => {
    const client = table.admin
    let reads = 0
    const lying = {
      client,
      table: 'tbl',
      get listIndex() {
        reads++
        return reads === 1 ? 'idx' : 5
      },
    }
    const backend = new DynamoBackend(lying as never)
    expect(reads).toBe(1)
    expect(backend.capabilities.list).toBe(true)
    const throwing = Object.defineProperty({ client }, 'table', {
      get() {
        throw new Error('boom')
      },
    })
    expect(() => new DynamoBackend(throwing as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
  })
})

describe('list and revoke', () => {
  test('a page is one Query of the index; a revoke is one UpdateItem; nothing else is sent', async () => {
    const clock = manualClock()
    const backend = table.open({ clock })
    for (const id of ['a', 'a%', 'a.b', 'ab', 'b']) await backend.acquire(id, 'h', 10_000)
    const before = table.requests()
    const page = await backend.list({ prefix: 'a', limit: 2 })
    expect(page.leases.map(({ workId }) => workId)).toEqual(['a', 'a%'])
    expect(page.cursor).toBe('a%')
    const next = await backend.list({ prefix: 'a', limit: 2, cursor: page.cursor! })
    expect(next.leases.map(({ workId }) => workId)).toEqual(['a.b', 'ab'])
    expect(next.cursor).toBeUndefined()
    expect(await backend.revoke('ab')).toBe(true)
    expect(await backend.revoke('ab')).toBe(false)
    const after = table.requests()
    expect((after.QueryCommand ?? 0) - (before.QueryCommand ?? 0)).toBe(2)
    expect(after.UpdateItemCommand! - before.UpdateItemCommand!).toBe(2)
    expect(after.GetItemCommand).toBe(before.GetItemCommand)
    const { Item } = await table.admin.send(
      new GetItemCommand({ TableName: table.tableName, Key: { workId: { S: 'ab' } }, ConsistentRead: true }),
    )
    expect(Item).toMatchObject({ holderId: { S: '' }, released: { BOOL: false }, listKey: { S: 'lease' } })
  })

  test('a revoke with an expected token is one conditional UpdateItem on every path; tokens compared exactly', async () => {
    const clock = manualClock()
    const backend = table.open({ clock })
    const held = await backend.acquire('job', 'h', 10_000)
    const before = table.requests()
    expect(await backend.revoke('job', { fencingToken: held.fencingToken + 1n })).toBe(false)
    expect(await backend.revoke('never', { fencingToken: 1n })).toBe(false)
    expect(await backend.revoke('job', { fencingToken: held.fencingToken })).toBe(true)
    expect(await backend.revoke('job', { fencingToken: held.fencingToken })).toBe(false)
    const after = table.requests()
    expect(after.UpdateItemCommand! - before.UpdateItemCommand!).toBe(4)
    expect(after.GetItemCommand).toBe(before.GetItemCommand)
    expect(after.QueryCommand).toBe(before.QueryCommand)
    // A token above 2^53 goes out as its decimal text: one below it is another token.
    const big = 2n ** 62n + 1n
    await table.admin.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: {
          workId: { S: 'big' },
          fencingToken: { N: String(big) },
          holderId: { S: 'h' },
          expiresAt: { N: String(clock.now() + 10_000) },
          released: { BOOL: false },
        },
      }),
    )
    expect(await backend.revoke('big', { fencingToken: big - 1n })).toBe(false)
    expect(await backend.revoke('big', { fencingToken: big })).toBe(true)
  })

  test('a cursor outside the prefix: before it starts at the first lease, after it sends nothing', async () => {
    const backend = table.open({ clock: manualClock() })
    for (const id of ['job-1', 'job-2', 'k']) await backend.acquire(id, 'h', 10_000)
    const ids = async (cursor: string) =>
      (await backend.list({ prefix: 'job-', cursor })).leases.map(({ workId }) => workId)
    expect(await ids('a')).toEqual(['job-1', 'job-2'])
    expect(await ids('job-')).toEqual(['job-1', 'job-2'])
    const before = table.roundTrips()
    expect(await ids('job.')).toEqual([])
    expect(await ids('z')).toEqual([])
    expect(table.roundTrips()).toBe(before)
  })

  test('the checkpoint size comes from its own attribute: the index carries no state', async () => {
    const backend = table.open({ clock: manualClock() })
    const record = await backend.acquire('job', 'h', 10_000)
    await backend.checkpoint(record, new Uint8Array(1_000), 10_000)
    await backend.checkpoint(record, new Uint8Array(0), 10_000)
    expect((await backend.list()).leases[0]).toMatchObject({ workId: 'job', checkpointBytes: 0 })
    await backend.checkpoint(record, new Uint8Array(7), 10_000, { sequence: 1 }) // superseded
    expect((await backend.list()).leases[0]!.checkpointBytes).toBe(0)
    const { Table } = await table.admin.send(new DescribeTableCommand({ TableName: table.tableName }))
    const [index] = Table?.GlobalSecondaryIndexes ?? []
    expect(index?.Projection?.ProjectionType).toBe('INCLUDE')
    expect(index?.Projection?.NonKeyAttributes).not.toContain('state')
  })

  test('without a list index, list is a TypeError that says how to get one; revoke still works', async () => {
    const clock = manualClock()
    const backend = table.open({ clock })
    await backend.acquire('job', 'h', 10_000)
    const noOption = table.open({ clock }, { listIndex: undefined })
    expect(noOption.capabilities.list).toBe(false)
    await expect(noOption.list()).rejects.toThrow(/listIndex/)
    expect(await noOption.revoke('job')).toBe(true)
    const wrongIndex = table.open({ clock }, { listIndex: 'no-such-index' })
    const error = await wrongIndex.list().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toContain('no-such-index')
    expect((error as Error).cause).toMatchObject({ name: 'ValidationException' })
  })

  test('list and revoke work with another partition key name', async () => {
    const other = await createTestTable({ partitionKey: 'pk' })
    try {
      const backend = other.open({ clock: manualClock() })
      await backend.acquire('job-1', 'h', 10_000)
      await backend.acquire('job-2', 'h', 10_000)
      expect(await backend.revoke('job-2')).toBe(true)
      const { leases } = await backend.list({ prefix: 'job-' })
      expect(leases.map(({ workId, holderId, free }) => ({ workId, holderId, free }))).toEqual([
        { workId: 'job-1', holderId: 'h', free: false },
        { workId: 'job-2', holderId: '', free: true },
      ])
    } finally {
      await other.close()
    }
  })
})

/**
 * The real client, except that a failed conditional UpdateItem that asked for ALL_OLD carries the item,
 * as DynamoDB (not dynalite) sends it. The item is read right after the failure, which is the item the
 * condition saw as long as the test sends one request at a time.
 */
function withItemOnFailure(client: DynamoClient, requests: string[]): DynamoClient {
  return {
    async send(command: any, options?: { abortSignal?: AbortSignal }) {
      requests.push(command.constructor.name)
      try {
        return await client.send(command, options)
      } catch (error) {
        const input = command.input
        if (
          !(command instanceof UpdateItemCommand) ||
          input.ReturnValuesOnConditionCheckFailure !== 'ALL_OLD'
        ) {
          throw error
        }
        if ((error as Error).name !== 'ConditionalCheckFailedException') throw error
        const { Item } = await client.send(
          new GetItemCommand({ TableName: input.TableName, Key: input.Key, ConsistentRead: true }),
        )
        throw Object.assign(error as Error, Item ? { Item } : {})
      }
    },
  }
}

describe('expiry only moves forward, checkpoints are ordered, the holder is reported', () => {
  for (const itemOnFailure of [false, true]) {
    const how = itemOnFailure ? 'with the item in the failed reply' : 'with one read after a failure'
    const open = (clock: Clock) => {
      const requests: string[] = []
      const backend = new DynamoBackend({
        // Without ReturnValuesOnConditionCheckFailure the wrapper only counts.
        client: withItemOnFailure(table.admin, requests),
        table: table.tableName,
        clock,
        returnValuesOnConditionCheckFailure: itemOnFailure,
      })
      const expiresAt = async (workId: string) =>
        Number(
          (
            await table.admin.send(
              new GetItemCommand({
                TableName: table.tableName,
                Key: { workId: { S: workId } },
                ConsistentRead: true,
              }),
            )
          ).Item?.expiresAt?.N,
        )
      // One request per failure with the item in the reply, one more (a read) without it.
      const extra = itemOnFailure ? 0 : 1
      return { backend, requests, expiresAt, extra }
    }

    test(`a shorter or late renew keeps the later expiry and succeeds (${how})`, async () => {
      const clock = manualClock()
      const { backend, requests, expiresAt, extra } = open(clock)
      const record = await backend.acquire('job-1', 'a', 10_000)
      requests.length = 0
      await backend.renew(record, 1_000)
      expect(await expiresAt('job-1')).toBe(T0 + 10_000)
      expect(requests).toHaveLength(1 + extra)
      clock.advance(11_000)
      expect(await code(backend.renew(record, 1_000))).toBe('LEASE_EXPIRED')
    })

    test(`checkpoints: superseded ones extend, a shorter ttl still stores (${how})`, async () => {
      const clock = manualClock()
      const { backend, requests, expiresAt, extra } = open(clock)
      const record = await backend.acquire('job-1', 'a', 10_000)
      await backend.checkpoint(record, bytes('second'), 10_000, { sequence: 20 })
      clock.advance(1_000)
      requests.length = 0
      // Superseded: nothing stored, the expiry still moves forward, in one more write.
      await backend.checkpoint(record, bytes('first, late'), 10_000, { sequence: 10 })
      expect(requests).toHaveLength(2 + extra)
      expect(await expiresAt('job-1')).toBe(T0 + 11_000)
      expect((await backend.readCheckpoint(record)).state).toEqual(bytes('second'))
      // A later sequence with a shorter ttl: stored, and the expiry stays where it was.
      requests.length = 0
      await backend.checkpoint(record, bytes('third'), 1_000, { sequence: 30 })
      expect(requests).toHaveLength(2 + extra)
      expect(await expiresAt('job-1')).toBe(T0 + 11_000)
      expect((await backend.readCheckpoint(record)).state).toEqual(bytes('third'))
      // Superseded and not later: nothing to write after the failure.
      requests.length = 0
      await backend.checkpoint(record, bytes('old'), 1_000, { sequence: 30 })
      expect(requests).toHaveLength(1 + extra)
      await backend.release(record)
      expect(await code(backend.checkpoint(record, bytes('stale'), 10_000, { sequence: 99 }))).toBe('FENCED')
    })

    test(`LEASE_HELD names the holder; a free lease at the largest token is TOKENS_EXHAUSTED (${how})`, async () => {
      const clock = manualClock()
      const { backend, requests, extra } = open(clock)
      const record = await backend.acquire('job-1', 'a', 10_000)
      clock.advance(4_000)
      requests.length = 0
      const held = await backend.acquire('job-1', 'b', 10_000).catch((e: unknown) => e)
      expect(isLeaseHeldError(held) && held.holder).toEqual({
        holderId: 'a',
        fencingToken: record.fencingToken,
        expiresAt: new Date(T0 + 10_000),
        expiresInMs: 6_000,
      })
      expect(requests).toHaveLength(1 + extra)
      await table.seedToken('job-2', MAX_FENCING_TOKEN)
      const exhausted = await backend.acquire('job-2', 'b', 10_000).catch((e: unknown) => e)
      expect(isTokensExhaustedError(exhausted)).toBe(true)
      const { Item } = await table.admin.send(
        new GetItemCommand({
          TableName: table.tableName,
          Key: { workId: { S: 'job-2' } },
          ConsistentRead: true,
        }),
      )
      expect(Item?.fencingToken?.N).toBe(String(MAX_FENCING_TOKEN))
    })
  }
})
