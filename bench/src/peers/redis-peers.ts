import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import { Redis } from 'ioredis'
import { Mutex } from 'redis-semaphore'
import { createLock, IoredisAdapter } from 'redlock-universal'
import { RedisBackend } from 'worklease-driver-redis-example'
import { countRedisCommands } from './counting.js'
import type { LockSide } from './lock-side.js'
import { packageVersion as version } from './package-version.js'
import type { OpenedPeerStore } from './peers.js'
import { workleaseDriverSide, workleaseSide } from './worklease-side.js'

const require = createRequire(import.meta.url)
const Redlock = require('redlock') as new (
  clients: unknown[],
  options: { retryCount: number; retryDelay?: number; retryJitter?: number },
) => {
  lock(resource: string, ttl: number): Promise<{ unlock(): Promise<void> }>
}

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

/** A client per side, as each library's user would have one, counting its commands. */
function client(): { redis: Redis; count: () => number } {
  // As the example driver asks: no resending on its own.
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false })
  return { redis, count: countRedisCommands(redis as never) }
}

/**
 * worklease through the Redis example driver (examples/driver-redis), and redlock, redlock-universal
 * and redis-semaphore, each with its own ioredis client on the same Redis. Keys get a per-run prefix.
 */
export async function openRedisSides(prefix: string): Promise<OpenedPeerStore> {
  const probe = new Redis(REDIS_URL, { maxRetriesPerRequest: 0, lazyConnect: true })
  try {
    await probe.connect()
    const info = await probe.info('server')
    const server = `Redis ${/redis_version:(\S+)/.exec(info)?.[1] ?? '?'}`
    // Its CPU is taken out of this machine's only where it runs on this machine.
    const local = ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(REDIS_URL).hostname)
    return {
      server,
      sides: redisSides(prefix),
      ...(local
        ? {
            serverCpuMs: () =>
              probe
                .info('cpu')
                .then(redisCpuMs)
                .catch(() => undefined),
          }
        : {}),
      closeServerProbe: async () => probe.disconnect(),
    }
  } catch (error) {
    probe.disconnect()
    throw error
  }
}

function redisSides(prefix: string): LockSide[] {
  const sides: LockSide[] = []

  const wl = client()
  const backend = new RedisBackend({ client: wl.redis as never, keyPrefix: `${prefix}:wl:` })
  const wlSide = workleaseSide(backend, wl.count, 'commands', 'worklease Leaser (Redis example driver)')
  sides.push({
    ...wlSide,
    async close() {
      await wlSide.close()
      wl.redis.disconnect()
    },
  })
  const drv = client()
  sides.push({
    ...workleaseDriverSide(
      new RedisBackend({ client: drv.redis as never, keyPrefix: `${prefix}:wd:` }),
      drv.count,
      'commands',
      'worklease driver (Redis example)',
    ),
    close: async () => drv.redis.disconnect(),
  })

  // redlock 4: SET NX PX through a Lua script on each of its servers (one here); unlock and
  // extend compare the random value. retryCount 0 = one attempt; -1 = until acquired.
  {
    const { redis, count } = client()
    const once = new Redlock([redis], { retryCount: 0 })
    const waiting = new Redlock([redis], { retryCount: -1 })
    type Held = { unlock(): Promise<void> }
    sides.push({
      label: `redlock ${version('redlock')}`,
      semantics:
        'no fencing token (random value); expiry on the Redis clock; no automatic renewal (extend by hand)',
      waiting: 'polls: retryDelay 200 ms ± retryJitter 100 ms',
      doesLess:
        'acquire is one script (EXISTS, then SET PX of a random value), release a compare-and-delete: no token to read and increment, no holder or expiry read, no TIME, no checkpoint handed over, no LEASE_HELD details; nothing kept locally (no renewal timer, no local deadline, no record object)',
      roundTripUnit: 'commands',
      async tryAcquire(key, ttlMs) {
        try {
          return await once.lock(`${prefix}:redlock:${key}`, ttlMs)
        } catch (error) {
          if ((error as Error).name === 'LockError') return null
          throw error
        }
      },
      release: (held: Held) => held.unlock(),
      waitAcquire: (key, ttlMs) => waiting.lock(`${prefix}:redlock:${key}`, ttlMs),
      async crash(key, ttlMs) {
        const start = performance.now()
        await once.lock(`${prefix}:redlock:${key}`, ttlMs)
        return { freeAt: start + ttlMs }
      },
      roundTrips: count,
      close: async () => redis.disconnect(),
    } as LockSide<Held>)
  }

  // redlock-universal: createLock per key (SimpleLock: SET NX PX, delete-if-match by script).
  {
    const { redis, count } = client()
    const adapter = new IoredisAdapter(redis as never)
    type Handle = Awaited<ReturnType<ReturnType<typeof createLock>['acquire']>>
    const locks = new Map<string, ReturnType<typeof createLock>>()
    const lockFor = (key: string, ttl: number, retryAttempts: number) => {
      const id = `${key}|${ttl}|${retryAttempts}`
      let lock = locks.get(id)
      if (!lock) {
        lock = createLock({ adapter, key: `${prefix}:rlu:${key}`, ttl, retryAttempts })
        locks.set(id, lock)
      }
      return lock
    }
    sides.push({
      label: `redlock-universal ${version('redlock-universal')}`,
      semantics:
        'no fencing token (random value); expiry on the Redis clock; renewal only inside using(); circuit breaker checks health',
      waiting: 'polls: retryDelay 100 ms (retryAttempts, default 3; here unbounded)',
      doesLess:
        'acquire is one SET NX PX of a random value, release a compare-and-delete script: no token, no holder or expiry read, no TIME, no checkpoint handed over; no renewal timer outside using(), no local deadline',
      roundTripUnit: 'commands',
      async tryAcquire(key, ttlMs) {
        try {
          return { lock: lockFor(key, ttlMs, 0), handle: await lockFor(key, ttlMs, 0).acquire() }
        } catch (error) {
          if ((error as Error).name === 'LockAcquisitionError') return null
          throw error
        }
      },
      async release(held: { lock: ReturnType<typeof createLock>; handle: Handle }) {
        await held.lock.release(held.handle)
      },
      async waitAcquire(key, ttlMs) {
        const lock = lockFor(key, ttlMs, 1_000_000)
        return { lock, handle: await lock.acquire() }
      },
      async crash(key, ttlMs) {
        const start = performance.now()
        await lockFor(key, ttlMs, 0).acquire()
        return { freeAt: start + ttlMs }
      },
      roundTrips: count,
      close: async () => redis.disconnect(),
    } as LockSide<{ lock: ReturnType<typeof createLock>; handle: Handle }>)
  }

  // redis-semaphore Mutex: SET NX PX, refreshed every 0.8 × lockTimeout, released by script.
  {
    const { redis, count } = client()
    sides.push({
      label: `redis-semaphore ${version('redis-semaphore')}`,
      semantics:
        'no fencing token (random identifier); expiry on the Redis clock; renewed by a timer (0.8 × ttl)',
      waiting: 'polls: retryInterval 10 ms (acquireTimeout 10 s by default; here 60 s)',
      doesLess:
        'acquire is one plain SET NX PX of a random identifier (no script), release a compare-and-delete: no token, no holder or expiry read, no TIME, no checkpoint handed over; locally one refresh interval timer, no local deadline, no per-call timeout',
      roundTripUnit: 'commands',
      async tryAcquire(key, ttlMs) {
        const mutex = new Mutex(redis as never, `${prefix}:rs:${key}`, {
          lockTimeout: ttlMs,
          acquireAttemptsLimit: 1,
        })
        return (await mutex.tryAcquire()) ? mutex : null
      },
      release: (mutex: Mutex) => mutex.release(),
      async waitAcquire(key, ttlMs) {
        const mutex = new Mutex(redis as never, `${prefix}:rs:${key}`, {
          lockTimeout: ttlMs,
          acquireTimeout: 60_000,
        })
        await mutex.acquire()
        return mutex
      },
      async crash(key, ttlMs) {
        const start = performance.now()
        // refreshInterval 0: no refresh timer, the crashed holder's lock just runs out.
        const mutex = new Mutex(redis as never, `${prefix}:rs:${key}`, {
          lockTimeout: ttlMs,
          refreshInterval: 0,
        })
        if (!(await mutex.tryAcquire())) throw new Error('redis-semaphore: a fresh key was held')
        return { freeAt: start + ttlMs }
      },
      roundTrips: count,
      close: async () => redis.disconnect(),
    } as LockSide<Mutex>)
  }

  return sides
}

/**
 * The Redis server's CPU time so far, ms, from `INFO cpu`: its process's user and system time, every
 * thread (the main one runs the commands and scripts and does the network reads and writes).
 */
export function redisCpuMs(info: string): number {
  const seconds = (name: string) => {
    const value = Number(new RegExp(`^${name}:([0-9.]+)\\s*$`, 'm').exec(info)?.[1])
    if (!Number.isFinite(value)) throw new Error(`INFO cpu has no ${name}`)
    return value
  }
  return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1000
}
