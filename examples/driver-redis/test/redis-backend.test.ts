import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { type AddressInfo, createServer, connect as netConnect } from 'node:net'
import {
  InvalidArgumentError,
  isLeaseHeldError,
  isWorkleaseError,
  type LeaseRecord,
  MAX_FENCING_TOKEN,
  TokensExhaustedError,
} from '@worklease/spec'
import { Cluster, Redis } from 'ioredis'
import { afterEach, describe, expect, test } from 'vitest'
import { RedisBackend } from '../src/index.js'
import * as scripts from '../src/lua-scripts.js'
import { commandName } from '../src/redis-backend.js'
import { lossyProxy } from './lossy-proxy.js'
import {
  connect,
  countCommands,
  createHarness,
  monitorServer,
  type RedisTestHarness,
  redisUrl,
} from './redis-harness.js'

const TTL = 60_000
const bytes = (text: string) => new TextEncoder().encode(text)

let harness: RedisTestHarness
afterEach(async () => {
  // Closed once: a test that opens none must not close the last one's again.
  const open: RedisTestHarness | undefined = harness
  harness = undefined as unknown as RedisTestHarness
  await open?.close()
})

/** Writes a lease hash by hand, as if `workId` had already been through `token` acquires. */
async function seed(workId: string, token: bigint): Promise<void> {
  await harness.admin.hset(harness.leaseKey(workId), {
    token: token.toString(),
    holder: 'ancestor',
    expires: '0',
    released: '1',
    clean: '1',
  })
}

describe('tokens are exact decimal strings', () => {
  test('2^53 + 1 goes up by one (a Lua double would round it)', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    await seed('w', 2n ** 53n + 1n)
    const record = await backend.acquire('w', 'holder-a', TTL)
    expect(record.fencingToken).toBe(2n ** 53n + 2n)
    // 2^53 + 2 and 2^53 + 3 are the same double; the fence compares strings, so it tells them apart.
    const forged: LeaseRecord = { ...record, fencingToken: 2n ** 53n + 3n }
    await expect(backend.renew(forged, TTL)).rejects.toMatchObject({ code: 'FENCED' })
    await backend.renew(record, TTL)
  })

  test('across 10^15, where the double path hands over to the digit path, tokens stay exact', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    const steps: [bigint, bigint][] = [
      [10n ** 15n - 2n, 10n ** 15n - 1n],
      [10n ** 15n - 1n, 10n ** 15n],
      [2n ** 53n - 1n, 2n ** 53n],
      [2n ** 53n, 2n ** 53n + 1n],
    ]
    for (const [seeded, next] of steps) {
      await seed(`w${seeded}`, seeded)
      const record = await backend.acquire(`w${seeded}`, 'holder-a', TTL)
      expect(record.fencingToken).toBe(next)
      expect(await harness.admin.hget(harness.leaseKey(`w${seeded}`), 'token')).toBe(String(next))
      await backend.renew(record, TTL)
    }
  })

  test('the last token, 2^63 - 1, is handed out and works; the next acquire is TOKENS_EXHAUSTED', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    await seed('w', MAX_FENCING_TOKEN - 1n)
    const record = await backend.acquire('w', 'holder-a', TTL)
    expect(record.fencingToken).toBe(9_223_372_036_854_775_807n)
    await backend.checkpoint(record, bytes('last'), TTL)
    expect(await backend.readCheckpoint(record)).toEqual({ state: bytes('last'), cleanHandoff: true })
    await backend.release(record)

    await expect(backend.acquire('w', 'holder-b', TTL)).rejects.toBeInstanceOf(TokensExhaustedError)
    expect(await harness.admin.hget(harness.leaseKey('w'), 'token')).toBe('9223372036854775807')
    expect(await harness.admin.hget(harness.leaseKey('w'), 'holder')).toBe('holder-a')
  })

  // Found by a review (session 40): only 2^63 - 1 itself stopped the increment, so a token above it
  // (written by hand or by another program) was incremented and stored, live, before a RangeError.
  test.each(['9223372036854775808', '18446744073709551615', '99999999999999999999'])(
    'a stored token above 2^63 - 1 (%s) is TOKENS_EXHAUSTED, and nothing is written',
    async (token) => {
      harness = await createHarness()
      const backend = await harness.open()
      const key = harness.leaseKey('w')
      await harness.admin.hset(key, { token, holder: 'ancestor', expires: '0', released: '1', clean: '1' })
      await expect(backend.acquire('w', 'holder-a', TTL)).rejects.toBeInstanceOf(TokensExhaustedError)
      expect(await harness.admin.hmget(key, 'token', 'holder')).toEqual([token, 'ancestor'])
    },
  )

  // Found by a review (session 49): Lua's tonumber() reads '1e+21', '-5' and '0x10', so they were
  // incremented and stored live (above 2^63 - 1, negative) before the caller got a RangeError, and a
  // zero-padded token was stored as one no fence matched: its new holder was FENCED at once.
  test.each(['1e+21', '9.3e18', '-5', '0x10', '0000000000000009', ' 7'])(
    'a stored token %j that is no canonical decimal is a store failure, and nothing is written',
    async (token) => {
      harness = await createHarness()
      const backend = await harness.open()
      const key = harness.leaseKey('w')
      await harness.admin.hset(key, { token, holder: 'ancestor', expires: '0', released: '1', clean: '1' })
      const error = await backend.acquire('w', 'holder-a', TTL).catch((e: unknown) => e)
      expect(isWorkleaseError(error)).toBe(false)
      expect(String(error)).toMatch(/malformed lease hash: token/)
      expect(await harness.admin.hmget(key, 'token', 'holder')).toEqual([token, 'ancestor'])
    },
  )
})

// Found by a review (session 49): every script read the expiry with tonumber(), and a stored 'NaN'
// (JavaScript's String(NaN)) compares false both ways: ACQUIRE took the lease as free while RENEW,
// RENEW_MANY and CHECKPOINT told its holder it ran on. Two holders, from one malformed field.
describe('a malformed number in a lease hash is a store failure, never a lease outcome', () => {
  const heldRecord: LeaseRecord = Object.freeze({
    workId: 'w',
    holderId: 'holder-a',
    fencingToken: 5n,
    expiresAt: new Date(0),
  })

  test.each(['NaN', '1e15', 'inf', ''])(
    'expires %j: every operation fails, and nothing is written',
    async (expires) => {
      harness = await createHarness()
      const backend = await harness.open()
      const key = harness.leaseKey('w')
      const stored = { token: '5', holder: 'holder-a', expires, released: '0', clean: '1', seq: '0' }
      await harness.admin.hset(key, stored)
      const calls: Array<[string, () => Promise<unknown>]> = [
        ['acquire', () => backend.acquire('w', 'holder-b', TTL)],
        ['renew', () => backend.renew(heldRecord, TTL)],
        ['renewMany', () => backend.renewMany([heldRecord], TTL)],
        ['checkpoint', () => backend.checkpoint(heldRecord, bytes('s'), TTL)],
        ['release', () => backend.release(heldRecord)],
        ['revoke', () => backend.revoke('w')],
      ]
      for (const [name, call] of calls) {
        const outcome = await call().then(
          (value) => `answered ${String(value)}`,
          (error: unknown) => (isWorkleaseError(error) ? `refused ${error.code}` : String(error)),
        )
        expect(outcome, name).toMatch(/malformed lease hash: expires/)
      }
      expect(await harness.admin.hgetall(key)).toEqual(stored)
    },
  )

  // Found by the review of that fix: list read the expiry with Number() and the token with BigInt(),
  // which take 'NaN' and '0x10'; so did an acquire's LEASE_HELD; and 17 digits passed as 16.
  test('list and a LEASE_HELD read the hash as strictly as the scripts do', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    await backend.acquire('w', 'holder-a', TTL)
    const key = harness.leaseKey('w')
    await harness.admin.hset(key, 'expires', 'NaN')
    await expect(backend.list!({ prefix: '' })).rejects.toThrow(/malformed lease hash: expires "NaN"/)
    await harness.admin.hset(key, { token: '0x10', expires: String(Date.now() + TTL) })
    const held = await backend.acquire('w', 'holder-b', TTL).catch((e: unknown) => e)
    expect(isWorkleaseError(held)).toBe(false)
    expect(String(held)).toMatch(/malformed lease hash: token "0x10"/)
    await harness.admin.hset(key, { token: '5', expires: '12345678901234567' })
    await expect(backend.renew({ ...heldRecord }, TTL)).rejects.toThrow(/malformed lease hash: expires/)
  })

  test('seq that is no integer: a checkpoint fails, and nothing is written', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    const record = await backend.acquire('w', 'holder-a', TTL)
    const key = harness.leaseKey('w')
    await harness.admin.hset(key, 'seq', 'NaN')
    const before = await harness.admin.hgetall(key)
    await expect(backend.checkpoint(record, bytes('s'), TTL)).rejects.toThrow(/malformed lease hash: seq/)
    expect(await harness.admin.hgetall(key)).toEqual(before)
  })
})

describe('storage layout', () => {
  test('one hash per workId with the documented fields; state stored byte for byte', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    const record = await backend.acquire('job-7', 'worker-a', TTL)
    const state = Uint8Array.from({ length: 256 }, (_, i) => 255 - i)
    await backend.checkpoint(record, state, TTL)
    const key = harness.leaseKey('job-7')
    const fields = await harness.admin.hgetall(key)
    expect(Object.keys(fields).sort()).toEqual([
      'clean',
      'expires',
      'holder',
      'released',
      'seq',
      'state',
      'token',
    ])
    expect(fields).toMatchObject({ token: '1', holder: 'worker-a', released: '0', clean: '1' })
    expect(Number(fields.seq)).toBeGreaterThan(0)
    expect(Number(fields.expires)).toBeGreaterThan(Date.now() - 30_000)
    expect(new Uint8Array((await harness.admin.hgetBuffer(key, 'state'))!)).toEqual(state)
    // No TTL on the key: tokens must outlive every lease, so Redis must never expire it.
    expect(await harness.admin.pttl(key)).toBe(-1)
    // The list index: the workId as a member of score 0 of the sorted set at the prefix itself.
    expect(await harness.admin.zrange(harness.keyPrefix, '0', '-1', 'WITHSCORES')).toEqual(['job-7', '0'])
    expect(await harness.admin.pttl(harness.keyPrefix)).toBe(-1)
  })

  // Found by a review (session 51): prefix and workId were joined bare, so the prefixes 'p:' and
  // 'p:leases:' named one key for the workIds 'leases:job-1' and 'job-1' (two applications shared a
  // lease and its tokens), and the first one's workId 'leases:' was the second's list index.
  test('two backends whose prefixes begin alike share no key', async () => {
    harness = await createHarness()
    const client = await connect()
    try {
      const outer = new RedisBackend({ client, keyPrefix: harness.keyPrefix })
      const inner = new RedisBackend({ client, keyPrefix: `${harness.keyPrefix}leases:` })
      await outer.acquire('leases:job-1', 'worker-of-outer', TTL)
      const record = await inner.acquire('job-1', 'worker-of-inner', TTL)
      expect(record.fencingToken).toBe(1n)
      await outer.acquire('leases:', 'worker-of-outer', TTL)
      expect((await inner.list()).leases.map((lease) => lease.workId)).toEqual(['job-1'])
      expect((await outer.list()).leases.map((lease) => lease.workId)).toEqual(['leases:', 'leases:job-1'])
    } finally {
      const keys = await harness.admin.keys(`${harness.keyPrefix}*`)
      if (keys.length > 0) await harness.admin.unlink(...keys)
      client.disconnect()
    }
  })

  test('every acquire re-adds its workId to the list index (one ZADD each, counted with MONITOR)', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    const zadds: string[] = []
    const sentinel = `sentinel-${harness.keyPrefix}`
    let sawSentinel: () => void = () => {}
    const seenSentinel = new Promise<void>((resolve) => {
      sawSentinel = resolve
    })
    const monitor = await monitorServer(({ args }) => {
      const command = args[0]?.toLowerCase()
      if (command === 'echo' && args[1] === sentinel) sawSentinel()
      else if (command === 'zadd' && args[1] === harness.keyPrefix) zadds.push(args.slice(2).join(' '))
    })
    try {
      for (const holder of ['a', 'b', 'c']) await backend.release(await backend.acquire('job', holder, TTL))
      // MONITOR streams commands in execution order: once the sentinel shows, everything before has.
      await harness.admin.echo(sentinel)
      await seenSentinel
    } finally {
      monitor.stop()
    }
    // One per acquire: a mark in the hash saying "indexed already" would outlive a deleted index.
    expect(zadds).toEqual(['0 job', '0 job', '0 job'])
    expect(await harness.admin.zrange(harness.keyPrefix, '0', '-1')).toEqual(['job'])
  })

  test('a lease stored before the list index existed joins it at its next acquire', async () => {
    harness = await createHarness()
    const unindexed = await harness.open(undefined, { listIndex: false })
    await unindexed.release(await unindexed.acquire('old', 'a', TTL))
    expect(await harness.admin.exists(harness.keyPrefix)).toBe(0)
    const backend = await harness.open()
    expect((await backend.list()).leases).toEqual([])
    await backend.acquire('old', 'b', TTL)
    expect((await backend.list()).leases.map(({ workId, fencingToken }) => [workId, fencingToken])).toEqual([
      ['old', 2n],
    ])
  })

  test('a lease whose index key was deleted joins it again at its next acquire', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    await backend.release(await backend.acquire('job', 'a', TTL))
    // Also a hash marked `indexed` by the version that skipped the ZADD once marked.
    await harness.admin.hset(harness.leaseKey('job'), 'indexed', '1')
    await harness.admin.del(harness.keyPrefix)
    await backend.acquire('job', 'b', TTL)
    expect((await backend.list()).leases.map(({ workId, fencingToken }) => [workId, fencingToken])).toEqual([
      ['job', 2n],
    ])
  })

  test('without the list index, acquire touches one key and list throws; revoke still works', async () => {
    harness = await createHarness()
    const backend = await harness.open(undefined, { listIndex: false })
    expect(backend.capabilities.list).toBe(false)
    await backend.acquire('job-7', 'worker-a', TTL)
    expect(await harness.admin.exists(harness.keyPrefix)).toBe(0)
    await expect(backend.list()).rejects.toThrow(/listIndex/)
    expect(await backend.revoke('job-7')).toBe(true)
    expect(await harness.admin.hget(harness.leaseKey('job-7'), 'holder')).toBe('')
  })
})

describe('list and revoke', () => {
  test('a page is one script call; a member without its hash is skipped, not a lease', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    const record = await backend.acquire('a', 'h', TTL)
    await backend.checkpoint(record, new Uint8Array(0), TTL)
    for (const id of ['a%', 'a*', 'a[', 'ab', 'b']) await backend.acquire(id, 'h', TTL)
    await harness.admin.zadd(harness.keyPrefix, '0', 'a-gone')
    const before = harness.roundTrips()
    const page = await backend.list({ prefix: 'a', limit: 3 })
    expect(harness.roundTrips() - before).toBe(1)
    expect(page.leases.map(({ workId }) => workId)).toEqual(['a', 'a%', 'a*'])
    expect(page.leases[0]!.checkpointBytes).toBe(0)
    expect(page.leases[1]!.checkpointBytes).toBeNull()
    expect(page.cursor).toBe('a*')
    const rest = await backend.list({ prefix: 'a', cursor: page.cursor! })
    expect(rest.leases.map(({ workId }) => workId)).toEqual(['a[', 'ab'])
    expect(rest.cursor).toBeUndefined()
    expect(Math.abs(page.now.getTime() - Date.now())).toBeLessThan(5_000)
  })

  test('revoke is one script call and ends only a live lease', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    await backend.acquire('w', 'h', TTL)
    const before = harness.roundTrips()
    expect(await backend.revoke('w')).toBe(true)
    expect(await backend.revoke('w')).toBe(false)
    expect(harness.roundTrips() - before).toBe(2)
    const fields = await harness.admin.hgetall(harness.leaseKey('w'))
    expect(fields).toMatchObject({ holder: '', released: '0', token: '1' })
  })

  test('revoke with an expected token is one script call on every path; the token compared as its exact string', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    const record = await backend.acquire('w', 'h', TTL)
    const before = harness.roundTrips()
    expect(await backend.revoke('w', { fencingToken: record.fencingToken + 1n })).toBe(false)
    expect(await backend.revoke('never', { fencingToken: 1n })).toBe(false)
    expect(await backend.revoke('w', { fencingToken: record.fencingToken })).toBe(true)
    expect(await backend.revoke('w', { fencingToken: record.fencingToken })).toBe(false)
    expect(harness.roundTrips() - before).toBe(4)
    // 2^62 + 1 and 2^62 are one double in Lua: only the string comparison tells them apart.
    const key = harness.leaseKey('big')
    const big = 2n ** 62n + 1n
    await harness.admin.hset(key, {
      token: String(big),
      holder: 'h',
      expires: String(Date.now() + TTL),
      released: '0',
      clean: '1',
      seq: '0',
    })
    expect(await backend.revoke('big', { fencingToken: big - 1n })).toBe(false)
    expect(await harness.admin.hget(key, 'holder')).toBe('h')
    expect(await backend.revoke('big', { fencingToken: big })).toBe(true)
    expect(await harness.admin.hget(key, 'holder')).toBe('')
  })

  // Found by a review (session 40), the fault session 39 fixed in the client-clock drivers: a revoked
  // lease whose expiry is still ahead of Redis's TIME (a failover to a replica whose clock is behind,
  // a clock stepped back) was revoked again, and its LEASE_HELD named holder ''.
  test("a revoked lease whose expiry is still ahead of TIME is nobody's: not revoked again, LEASE_HELD names no one", async () => {
    harness = await createHarness()
    const backend = await harness.open()
    const record = await backend.acquire('w', 'h', TTL)
    expect(await backend.revoke('w')).toBe(true)
    const key = harness.leaseKey('w')
    await harness.admin.hset(key, 'expires', String(Date.now() + TTL))
    expect(await backend.revoke('w')).toBe(false)
    expect(await backend.revoke('w', { fencingToken: record.fencingToken })).toBe(false)
    expect(await harness.admin.hget(key, 'holder')).toBe('')
    const refused = await backend.acquire('w', 'x', TTL).catch((error: unknown) => error)
    expect(isLeaseHeldError(refused) && refused.holder).toBe(undefined)
  })

  test('on a Cluster the list index is off unless the key prefix has a hash tag', async () => {
    harness = await createHarness() // afterEach closes it: not the previous case's again
    const safe = {
      lazyConnect: true,
      retryDelayOnFailover: 0,
      redisOptions: { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false },
    }
    const cluster = new Cluster([], safe)
    try {
      expect(new RedisBackend({ client: cluster }).capabilities.list).toBe(false)
      expect(() => new RedisBackend({ client: cluster, listIndex: true })).toThrow(/hash tag/)
      expect(() => new RedisBackend({ client: cluster, keyPrefix: '{}:', listIndex: true })).toThrow(
        /hash tag/,
      )
      const tagged = new RedisBackend({ client: cluster, keyPrefix: '{billing}:', listIndex: true })
      expect(tagged.capabilities.list).toBe(true)
    } finally {
      cluster.disconnect()
    }
  })
})

describe('failures of the store are not lease outcomes', () => {
  test('a key of the wrong type rejects with the Redis error, not LEASE_HELD or FENCED', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    await harness.admin.set(harness.leaseKey('w'), 'not a hash')
    const error = await backend.acquire('w', 'holder-a', TTL).catch((caught: unknown) => caught)
    expect(isWorkleaseError(error)).toBe(false)
    expect(String(error)).toMatch(/WRONGTYPE/)
  })

  test('a closed client rejects with the client error', async () => {
    harness = await createHarness()
    const client = await connect()
    const backend = new RedisBackend({ client, keyPrefix: harness.keyPrefix })
    client.disconnect()
    const error = await backend.acquire('w', 'holder-a', TTL).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(Error)
    expect(isWorkleaseError(error)).toBe(false)
  })

  // Found by a review (session 37): any status was read as success but FENCED and EXPIRED, renewMany's
  // was not read, and revoke took anything but OK for "nothing to revoke".
  const record: LeaseRecord = Object.freeze({
    workId: 'w',
    holderId: 'holder-a',
    fencingToken: 3n,
    expiresAt: new Date(Date.now() + TTL),
  })
  const calls = {
    acquire: (backend: RedisBackend) => backend.acquire('w', 'holder-a', TTL),
    acquireWithCheckpoint: (backend: RedisBackend) => backend.acquireWithCheckpoint('w', 'holder-a', TTL),
    renew: (backend: RedisBackend) => backend.renew(record, TTL),
    renewMany: (backend: RedisBackend) => backend.renewMany([record], TTL),
    checkpoint: (backend: RedisBackend) => backend.checkpoint(record, bytes('s'), TTL),
    release: (backend: RedisBackend) => backend.release(record),
    readCheckpoint: (backend: RedisBackend) => backend.readCheckpoint(record),
    revoke: (backend: RedisBackend) => backend.revoke('w'),
  }
  test.each([
    ['acquire', ['FENCED', '5', '123']],
    ['acquire', ['OK', '5']],
    ['acquireWithCheckpoint', ['HELD', 'holder-b']],
    ['renew', ['HELD']],
    ['renew', ['OK', 'extra']],
    ['renewMany', ['FENCED', 'R']],
    ['checkpoint', ['EXPIRED']],
    ['checkpoint', ['FREE']],
    ['release', ['BOGUS']],
    ['readCheckpoint', ['EXHAUSTED']],
    ['revoke', ['BOGUS']],
    ['revoke', []],
  ] as const)('%s answered %j by a script is a store failure, never an outcome', async (operation, reply) => {
    const client: Record<string, unknown> = {
      defineCommand(name: string) {
        client[name] = async () => reply
        client[`${name}Buffer`] = async () => reply
      },
    }
    const backend = new RedisBackend({ client: client as never })
    const outcome = await calls[operation](backend).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    )
    expect(outcome).toEqual({ error: expect.any(Error) })
    expect(isWorkleaseError((outcome as { error: unknown }).error)).toBe(false)
  })
})

// Found by a review (session 37): on a server with maxmemory-policy allkeys-lru, a workId acquired five
// times got token 1 again once other keys had filled its memory.
describe('a server that evicts keys', () => {
  const serverBinary = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((path) =>
    existsSync(path),
  )
  if (!serverBinary)
    console.log('[driver-redis] skipped: no redis-server binary to start a private server with')
  test.skipIf(!serverBinary)(
    "is refused at this backend's first acquire, in its one script call; volatile and noeviction are not",
    async () => {
      const port = await new Promise<number>((resolve) => {
        const probe = createServer().listen(0, '127.0.0.1', () => {
          const { port } = probe.address() as AddressInfo
          probe.close(() => resolve(port))
        })
      })
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
      const server = spawn(serverBinary!, [...args, '--maxmemory-policy', 'allkeys-lru'], { stdio: 'ignore' })
      try {
        // Listening before a client connects: ioredis reports each refused try as an unhandled error.
        for (let tries = 0; ; tries++) {
          const up = await new Promise<boolean>((resolve) => {
            const socket = netConnect(port, '127.0.0.1', () => {
              socket.destroy()
              resolve(true)
            }).on('error', () => resolve(false))
          })
          if (up || tries > 50) break
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        const client = await connect(`redis://127.0.0.1:${port}`)
        try {
          let commands = 0
          countCommands(client, () => commands++)
          const backend = new RedisBackend({ client, keyPrefix: 'evicts:' })
          const refused = await backend.acquire('w', 'holder-a', TTL).catch((error: unknown) => error)
          expect(String(refused)).toMatch(/maxmemory-policy allkeys-lru evicts any key/)
          expect(isWorkleaseError(refused)).toBe(false)
          expect([commands, await client.exists('evicts:w')]).toEqual([1, 0])
          const withCheckpoint = await backend
            .acquireWithCheckpoint('w', 'holder-a', TTL)
            .catch((error: unknown) => error)
          expect(String(withCheckpoint)).toMatch(/evicts any key/)
          for (const policy of ['volatile-lru', 'noeviction']) {
            await client.config('SET', 'maxmemory-policy', policy)
            const fresh = new RedisBackend({ client, keyPrefix: `${policy}:` })
            expect((await fresh.acquire('w', 'holder-a', TTL)).fencingToken).toBe(1n)
          }
        } finally {
          client.disconnect()
        }
      } finally {
        server.kill()
      }
    },
  )
})

describe('round trips', () => {
  // ioredis turns the first EVALSHA of each script on a connection into an EVAL with the body as it
  // writes it, so by name the client only sees 'evalsha'; the MONITOR case below sees both on the wire.
  test('each operation is one script command, including the first call on a fresh connection', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    const record = await backend.acquire('w', 'holder-a', TTL)
    await backend.renew(record, TTL)
    await backend.checkpoint(record, bytes('s'), TTL)
    await backend.readCheckpoint(record)
    await backend.release(record)
    expect(harness.commands()).toEqual({ evalsha: 5 })
    const again = await backend.acquire('w', 'holder-b', TTL)
    await backend.renew(again, TTL)
    await backend.list()
    await backend.revoke('w')
    expect(harness.commands()).toEqual({ evalsha: 9 })
  })

  test('the client-side count equals what the server saw (MONITOR)', async () => {
    harness = await createHarness()
    const client = await connect()
    const address = /addr=(\S+)/.exec(String(await client.client('INFO')))?.[1]
    expect(address).toBeDefined()
    let counted = 0
    countCommands(client, () => counted++)
    const seen: string[] = []
    let sawSentinel: () => void = () => {}
    const sentinel = new Promise<void>((resolve) => {
      sawSentinel = resolve
    })
    const monitor = await monitorServer(({ source, args }) => {
      if (source !== address) return
      if (args[0]?.toLowerCase() === 'echo' && args[1] === 'sentinel') sawSentinel()
      else seen.push(args[0]!.toLowerCase())
    })
    try {
      const backend = new RedisBackend({ client, keyPrefix: harness.keyPrefix })
      for (let i = 0; i < 3; i++) {
        const record = await backend.acquire('w', 'holder-a', TTL)
        await backend.checkpoint(record, bytes(`s${i}`), TTL)
        await backend.release(record)
      }
      await backend.acquire('w', 'holder-a', TTL).catch(() => undefined)
      await backend.acquire('w', 'holder-b', TTL).catch(() => undefined) // LEASE_HELD: still one
      const before = counted
      // MONITOR streams commands in execution order: once the sentinel shows, everything before has.
      await client.echo('sentinel')
      await sentinel
      expect(before).toBe(11)
      expect(seen).toHaveLength(before)
      expect(new Set(seen)).toEqual(new Set(['eval', 'evalsha']))
    } finally {
      monitor.stop()
      client.disconnect()
    }
  })

  test('an in-flight call abandoned by its signal rejects with the reason', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    const controller = new AbortController()
    const pending = backend.acquire('w', 'holder-a', TTL, { signal: controller.signal })
    controller.abort(new Error('gave up'))
    await expect(pending).rejects.toThrow('gave up')
  })
})

// Issue 14, item 8: with ioredis's defaults a release whose reply was lost came back FENCED, because
// the client sent it a second time after reconnecting, and the runner then reported lost work that
// had in fact succeeded. Every operation but release is harmless to repeat (acquire answers
// LEASE_HELD naming the caller, renew and a checkpoint with the same sequence only extend), but a
// repeated release is FENCED by the contract, so the driver must not let its client repeat it.
describe('a command whose reply was lost is never sent twice', () => {
  test('ioredis defaults resend it after reconnecting (why the backend refuses such a client)', async () => {
    harness = await createHarness()
    const proxy = await lossyProxy(new URL(redisUrl()))
    const client = new Redis(proxy.url, { lazyConnect: true })
    client.on('error', () => undefined)
    try {
      await client.connect()
      const key = `${harness.keyPrefix}counter`
      proxy.loseNextReply()
      const reply = await client.eval("return redis.call('INCR', KEYS[1])", 1, key)
      // The caller sees one success, for a command the server ran twice.
      expect(reply).toBe(2)
      expect(await harness.admin.get(key)).toBe('2')
    } finally {
      client.disconnect()
      await proxy.close()
    }
  })

  test('the constructor reads its options once and refuses bad ones as INVALID_ARGUMENT', async () => {
    harness = await createHarness()
    const client = new Redis(redisUrl(), {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
    })
    try {
      const invalid = expect.objectContaining({ code: 'INVALID_ARGUMENT' })
      const throwing = Object.defineProperty({ client }, 'keyPrefix', {
        get() {
          throw new Error('boom')
        },
      })
      // Made a string on each use, it would name another key on every call.
      const shifting = { [Symbol.toPrimitive]: () => `prefix-${Math.random()}:` }
      for (const options of [
        null,
        throwing,
        { client: {} },
        { client, keyPrefix: 5 },
        { client, keyPrefix: shifting },
        // UTF-8 has no lone surrogate: 'a\ud800:' and 'a\udfff:' would both be sent as 'a\ufffd:'.
        { client, keyPrefix: 'a\ud800:' },
        // The separator of prefix and workId in a lease's key.
        { client, keyPrefix: 'a\u0000' },
        { client, listIndex: 'no' },
        { client, maxStateBytes: -1 },
        { client, maxStateBytes: 'x' },
        { client: new Redis(redisUrl(), { lazyConnect: true }) },
      ]) {
        expect(() => new RedisBackend(options as never)).toThrow(invalid)
      }
    } finally {
      client.disconnect()
    }
  })

  test('the constructor refuses a client that resends unfulfilled commands', async () => {
    harness = await createHarness()
    const defaults = new Redis(redisUrl(), { lazyConnect: true })
    const cluster = new Cluster([], { lazyConnect: true })
    try {
      expect(() => new RedisBackend({ client: defaults })).toThrow(/autoResendUnfulfilledCommands/)
      expect(() => new RedisBackend({ client: cluster })).toThrow(/autoResendUnfulfilledCommands/)
      // A Cluster also resends on its own when a node connection closes mid-command.
      const halfSafe = new Cluster([], {
        lazyConnect: true,
        redisOptions: { autoResendUnfulfilledCommands: false },
      })
      expect(() => new RedisBackend({ client: halfSafe })).toThrow(/retryDelayOnFailover/)
      halfSafe.disconnect()
      const safe = new Cluster([], {
        lazyConnect: true,
        retryDelayOnFailover: 0,
        redisOptions: { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false },
      })
      expect(() => new RedisBackend({ client: safe })).not.toThrow()
      safe.disconnect()
      expect(
        () => new RedisBackend({ client: defaults.duplicate({ autoResendUnfulfilledCommands: false }) }),
      ).not.toThrow()
    } finally {
      defaults.disconnect()
      cluster.disconnect()
    }
  })

  test('a release whose reply was lost rejects with the connection error, and the lease is released', async () => {
    harness = await createHarness()
    const proxy = await lossyProxy(new URL(redisUrl()))
    const client = await connect(proxy.url)
    client.on('error', () => undefined)
    try {
      const backend = new RedisBackend({ client, keyPrefix: harness.keyPrefix })
      const record = await backend.acquire('w', 'holder-a', TTL)
      proxy.loseNextReply()
      const error = await backend.release(record).catch((caught: unknown) => caught)
      // An unknown outcome, for the caller to resolve; never FENCED from a second copy of itself.
      expect(error).toBeInstanceOf(Error)
      expect(isWorkleaseError(error)).toBe(false)
      expect(await harness.admin.hget(harness.leaseKey('w'), 'released')).toBe('1')
    } finally {
      client.disconnect()
      await proxy.close()
    }
  })
})

// ioredis adds its own keyPrefix to a script's KEYS but not to its ARGV, and the list script builds
// the lease keys from ARGV: with both prefixes, list found none of the leases acquire had written.
describe('a client with its own keyPrefix', () => {
  test('the constructor refuses it with INVALID_ARGUMENT, naming the driver keyPrefix option', async () => {
    harness = await createHarness()
    const prefixed = await connect(undefined, { keyPrefix: `${harness.keyPrefix}client:` })
    const safeCluster = {
      lazyConnect: true,
      retryDelayOnFailover: 0,
      redisOptions: { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false },
    }
    const cluster = new Cluster([], { ...safeCluster, keyPrefix: 'app:' })
    const clusterByNode = new Cluster([], {
      ...safeCluster,
      redisOptions: { ...safeCluster.redisOptions, keyPrefix: 'app:' },
    })
    try {
      for (const client of [prefixed, cluster, clusterByNode]) {
        const error = (() => {
          try {
            new RedisBackend({ client, keyPrefix: harness.keyPrefix })
          } catch (caught) {
            return caught
          }
        })()
        expect(error).toBeInstanceOf(InvalidArgumentError)
        expect(String(error)).toMatch(/RedisBackend's own keyPrefix option/)
      }
      // An empty keyPrefix is no prefix (ioredis ignores it).
      const unprefixed = await connect(undefined, { keyPrefix: '' })
      try {
        const backend = new RedisBackend({ client: unprefixed, keyPrefix: harness.keyPrefix })
        await backend.acquire('w', 'holder-a', TTL)
        expect((await backend.list()).leases.map((lease) => lease.workId)).toEqual(['w'])
      } finally {
        unprefixed.disconnect()
      }
    } finally {
      prefixed.disconnect()
      cluster.disconnect()
      clusterByNode.disconnect()
    }
  })
})

// Every script makes its checks and its reads before its first write, so an error reply (which
// ioredis's reconnectOnError may resend, and which a caller takes for "not done") wrote nothing.
describe('a script that fails has written nothing', () => {
  test('an acquire whose list index key has another type (WRONGTYPE) leaves the lease untouched', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    // The index key holds something else: e.g. another backend's lease whose workId nests prefixes.
    await harness.admin.hset(harness.keyPrefix, 'x', '1')
    await seed('seeded', 5n)
    const before = await harness.admin.hgetall(harness.leaseKey('seeded'))
    for (const acquire of [
      (workId: string) => backend.acquire(workId, 'holder-a', TTL),
      (workId: string) => backend.acquireWithCheckpoint(workId, 'holder-a', TTL),
    ]) {
      for (const workId of ['new', 'seeded']) {
        const error = await acquire(workId).catch((caught: unknown) => caught)
        expect(isWorkleaseError(error)).toBe(false)
        expect(String(error)).toMatch(/WRONGTYPE/)
      }
      expect(await harness.admin.hgetall(harness.leaseKey('new'))).toEqual({})
      expect(await harness.admin.hgetall(harness.leaseKey('seeded'))).toEqual(before)
    }
  })

  test('a renewMany with one key of another type renews none of the batch', async () => {
    harness = await createHarness()
    const backend = await harness.open()
    const a = await backend.acquire('a', 'holder', TTL)
    const b = await backend.acquire('b', 'holder', TTL)
    const before = await harness.admin.hget(harness.leaseKey('a'), 'expires')
    await harness.admin.del(harness.leaseKey('b'))
    await harness.admin.set(harness.leaseKey('b'), 'not a hash')
    const error = await backend.renewMany([a, b], 10 * TTL).catch((caught: unknown) => caught)
    expect(isWorkleaseError(error)).toBe(false)
    expect(String(error)).toMatch(/WRONGTYPE/)
    expect(await harness.admin.hget(harness.leaseKey('a'), 'expires')).toBe(before)
  })
})

// CHECKPOINT as the first version of this driver defined it (no sequence, no max rule), under the
// name that version gave it and the current driver kept while its body changed.
const OLD_CHECKPOINT = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function int(n)
  return string.format('%.0f', n)
end
local function is_holder(f, token, holder)
  return f[1] == token and f[2] == holder and f[4] ~= '1'
end

local key = KEYS[1]
local f = redis.call('HMGET', key, 'token', 'holder', 'expires', 'released')
if not is_holder(f, ARGV[1], ARGV[2]) then return {'FENCED'} end
redis.call('HSET', key, 'state', ARGV[4], 'expires', int(now_ms() + tonumber(ARGV[3])))
return {'OK'}
`

// With enableAutoPipelining, ioredis finds a script by its command name on the client, so another copy
// of the driver that defines a different script under the same name replaces this one's.
describe('script command names', () => {
  test('each name ends in a hash of its definition: two different definitions never share one', async () => {
    harness = await createHarness()
    const client = await connect()
    const defined: Array<{ name: string; definition: string }> = []
    const define = client.defineCommand.bind(client)
    client.defineCommand = (name, definition) => {
      defined.push({ name, definition: `${definition.numberOfKeys}\n${definition.lua}` })
      define(name, definition)
    }
    try {
      new RedisBackend({ client, keyPrefix: harness.keyPrefix })
    } finally {
      client.disconnect()
    }
    expect(defined.length).toBeGreaterThan(0)
    for (const { name } of defined) expect(name).toMatch(/^worklease[A-Za-z]+[0-9a-f]{12}$/)
    for (const x of defined) {
      for (const y of defined) expect(x.name === y.name).toBe(x.definition === y.definition)
    }
    // The scheme itself: a changed body or key count is a new name; the same definition the same one.
    expect(commandName('Checkpoint', OLD_CHECKPOINT, 1)).not.toBe(
      commandName('Checkpoint', scripts.CHECKPOINT, 1),
    )
    expect(commandName('Acquire', scripts.ACQUIRE, 1)).not.toBe(commandName('Acquire', scripts.ACQUIRE, 2))
    expect(commandName('Renew', `${scripts.RENEW} `, 1)).not.toBe(commandName('Renew', scripts.RENEW, 1))
    expect(commandName('Renew', scripts.RENEW, 1)).toBe(commandName('Renew', scripts.RENEW, 1))
  })

  for (const enableAutoPipelining of [false, true]) {
    test(`an older copy of the driver on the same client cannot replace checkpoint (autopipelining ${enableAutoPipelining})`, async () => {
      harness = await createHarness()
      const client = await connect(undefined, { enableAutoPipelining })
      try {
        const backend = new RedisBackend({ client, keyPrefix: harness.keyPrefix })
        const record = await backend.acquire('w', 'holder-a', TTL)
        const state = async () => new TextDecoder().decode((await backend.readCheckpoint(record)).state!)
        // What an older copy's constructor does on the shared client: under the name it used then ...
        client.defineCommand('workleaseCheckpointV1', { lua: OLD_CHECKPOINT, numberOfKeys: 1 })
        await backend.checkpoint(record, bytes('new'), TTL, { sequence: 2 })
        await backend.checkpoint(record, bytes('old'), TTL, { sequence: 1 })
        expect(await state()).toBe('new')
        // ... and under the name this scheme gives its body.
        client.defineCommand(commandName('Checkpoint', OLD_CHECKPOINT, 1), {
          lua: OLD_CHECKPOINT,
          numberOfKeys: 1,
        })
        await backend.checkpoint(record, bytes('newer'), TTL, { sequence: 4 })
        await backend.checkpoint(record, bytes('older'), TTL, { sequence: 3 })
        expect(await state()).toBe('newer')
      } finally {
        client.disconnect()
      }
    })
  }
})

// The Lua docs/writing-a-driver.md prints, checked against the driver's own scripts.
describe('docs/writing-a-driver.md', () => {
  const guide = readFileSync(new URL('../../../docs/writing-a-driver.md', import.meta.url), 'utf8')
  const blocks = [...guide.matchAll(/```lua\n([\s\S]*?)```/g)].map((match) => match[1]!)
  const real = Object.entries(scripts as Record<string, unknown>).filter(
    (entry): entry is [string, string] => typeof entry[1] === 'string',
  )

  test('every Lua block of the guide is part of a real script, verbatim', async () => {
    harness = await createHarness() // only for afterEach to close
    expect(blocks.length).toBeGreaterThan(0)
    for (const block of blocks) {
      expect(real.find(([, lua]) => lua.includes(block))?.[0], block).toBeDefined()
    }
  })

  test("the guide's renew never moves a live lease's expiry earlier", async () => {
    harness = await createHarness()
    const backend = await harness.open()
    const renew = blocks.find((block) => block.includes("'EXPIRED'"))
    expect(renew).toBeDefined()
    // The helpers every script starts with, as the guide prints them.
    const helpers = blocks.find((block) => block.includes('local function now_ms'))
    expect(helpers).toBeDefined()
    const key = harness.leaseKey('w')
    const record = await backend.acquire('w', 'holder-a', 10 * TTL)
    const before = Number(await harness.admin.hget(key, 'expires'))
    const reply = await harness.admin.eval(
      `${helpers}${renew}`,
      1,
      key,
      record.fencingToken.toString(),
      record.holderId,
      '1000',
    )
    expect(reply).toEqual(['OK'])
    expect(Number(await harness.admin.hget(key, 'expires'))).toBe(before)
  })
})
