import { setTimeout as delay } from 'node:timers/promises'
import { MemoryBackend, MemoryStore } from '@worklease/memory'
import { isInvalidArgumentError } from '@worklease/spec'
import { ForwardingBackend } from '@worklease/testkit'
import { describe, expect, test } from 'vitest'
import { LeasePool, Leaser, type PoolEvent, type PoolPlan, type Timers } from '../src/index.js'
import { collectUncaughtExceptions, setup, TTL, track } from './setup.js'

/**
 * Found by a review (session 49): options and answers of the user's that lie, or that the runner took
 * and then could not use. Each test failed before its fix.
 */

describe("random's answer is used as the number it was checked as", () => {
  collectUncaughtExceptions()

  test('an object whose valueOf says 0.5 to the check, then -1e9, cannot delay a renewal', async () => {
    const random = () => {
      let reads = 0
      return { valueOf: () => (++reads <= 2 ? 0.5 : -1e9) } as unknown as number
    }
    const { time, leaser, backend } = setup({ random, renewJitter: 0.2 })
    const lease = await leaser.acquire('job')
    const renewsBefore = backend.calls.renew
    await time.advance(2 * TTL)
    expect(backend.calls.renew - renewsBefore).toBeGreaterThan(0)
    expect(lease.held).toBe(true)
  })

  test('a bigint answer counts as 0.5: the acquire resolves, and leaves no lease behind a rejection', async () => {
    const { time, leaser } = setup({ random: (() => 0n) as unknown as () => number, renewJitter: 0.2 })
    const acquired = track(leaser.acquire('job'))
    await time.advance(10)
    expect(acquired.rejected).toBe(false)
    expect(acquired.value?.held).toBe(true)
  })
})

describe('retry options', () => {
  test('initialDelayMs 0 is refused: every delay would be 0, and a wait would poll without pause', () => {
    expect(
      () => new Leaser({ backend: new MemoryBackend(), ttlMs: 30_000, retry: { initialDelayMs: 0 } }),
    ).toThrow(/retry.initialDelayMs must be a number in 1\.\./)
  })

  test('a maxDelayMs below the default initialDelayMs lowers the default, not an error about it', () => {
    expect(
      () => new Leaser({ backend: new MemoryBackend(), ttlMs: 30_000, retry: { maxDelayMs: 20 } }),
    ).not.toThrow()
    const leaser = new Leaser({ backend: new MemoryBackend(), ttlMs: 30_000, holderId: 'm1' })
    const pool = () =>
      new LeasePool({
        leaser,
        group: 'g',
        units: ['a'],
        handler: async () => undefined,
        handlerRetry: { maxDelayMs: 500 },
      })
    expect(pool).not.toThrow()
  })

  test('an initialDelayMs above the default maxDelayMs raises the default, not an error about it', () => {
    const leaser = new Leaser({
      backend: new MemoryBackend(),
      ttlMs: 60_000,
      retry: { initialDelayMs: 5_000 },
    })
    expect(leaser.ttlMs).toBe(60_000)
    expect(
      () =>
        new Leaser({
          backend: new MemoryBackend(),
          ttlMs: 60_000,
          retry: { initialDelayMs: 5_000, maxDelayMs: 2_000 },
        }),
    ).toThrow(/retry.maxDelayMs must be a number in 5000\.\./)
  })
})

test('a ttlMs too short to renew in is refused by its own name', () => {
  expect(() => new Leaser({ backend: new MemoryBackend(), ttlMs: 1 })).toThrow(/^ttlMs 1 is too short/)
  expect(() => new Leaser({ backend: new MemoryBackend(), ttlMs: 2 })).not.toThrow()
})

test("a Leaser's settings cannot be changed after the check: the runner reads them back", async () => {
  const store = new MemoryStore()
  const leaser = new Leaser({ backend: new MemoryBackend({ store }), ttlMs: 30_000, holderId: 'worker-a' })
  for (const [name, value] of [
    ['holderId', 'worker-b'],
    ['ttlMs', 1e12],
    ['backend', null],
    ['renewIntervalMs', 1],
    ['safetyMarginMs', 0],
  ] as const) {
    expect(() => {
      ;(leaser as unknown as Record<string, unknown>)[name] = value
    }, name).toThrow(TypeError)
  }
  const lease = await leaser.acquire('job')
  expect(lease.record.holderId).toBe('worker-a')
  expect((await new MemoryBackend({ store }).list!({ prefix: 'job' })).leases[0]?.holderId).toBe('worker-a')
  await leaser.close()
})

test('a signal whose aborted getter throws once it was checked is a bad signal, with nothing sent', async () => {
  const { leaser, backend } = setup()
  let reads = 0
  const signal = {
    get aborted() {
      if (++reads > 1) throw new Error('aborted getter boom')
      return false
    },
    addEventListener() {},
    removeEventListener() {},
  } as unknown as AbortSignal
  const error = await leaser.acquire('job', { signal }).catch((e: unknown) => e)
  expect(isInvalidArgumentError(error)).toBe(true)
  expect(String(error)).toMatch(/signal could not be read/)
  expect(backend.calls.acquire).toBe(0)
})

describe('LeasePool', () => {
  test("a planner's answer that cannot be read fails the rebalance with an InvalidArgumentError", async () => {
    const rebalanceErrorFor = async (answer: () => unknown) => {
      const leaser = new Leaser({ backend: new MemoryBackend(), ttlMs: 30_000, holderId: 'm1' })
      const events: PoolEvent[] = []
      const pool = new LeasePool({
        leaser,
        group: 'g',
        units: ['a'],
        handler: async () => undefined,
        planner: () => answer() as PoolPlan,
      })
      pool.on((event) => events.push(event))
      await pool.start()
      await pool.close({ timeoutMs: 1_000 })
      await leaser.close({ timeoutMs: 1_000 })
      return (events.find((e) => e.type === 'rebalanceFailed') as { error: unknown } | undefined)?.error
    }
    const throwingGetter = () => ({
      get take(): number {
        throw new Error('getter boom')
      },
      release: 0,
    })
    const proxyWithoutPrototype = () =>
      new Proxy(
        { take: 0, release: 0 },
        {
          getPrototypeOf() {
            throw new Error('getPrototypeOf boom')
          },
        },
      )
    for (const answer of [throwingGetter, proxyWithoutPrototype]) {
      const error = await rebalanceErrorFor(answer)
      expect(isInvalidArgumentError(error), String(error)).toBe(true)
    }
  })

  test("the units function's timeout fits a timer whatever rebalanceIntervalMs is, with timers that do not clamp", async () => {
    // The Timers example of timers.ts's own TSDoc: Node.js timers, unref'd, no clamping.
    const timers: Timers = {
      now: () => performance.now(),
      wallNow: () => Date.now(),
      setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
      clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
    }
    const leaser = new Leaser({ backend: new MemoryBackend(), ttlMs: 30_000, holderId: 'm1' })
    const failed: unknown[] = []
    const pool = new LeasePool({
      leaser,
      group: 'g',
      // Answers in 50 ms: far within ten rebalance intervals of 300,000,000 ms.
      units: async () => {
        await delay(50)
        return ['a', 'b']
      },
      handler: (_lease, unit) =>
        new Promise<void>((resolve) => unit.signal.addEventListener('abort', () => resolve())),
      rebalanceIntervalMs: 300_000_000,
      timers,
    })
    pool.on((event) => {
      if (event.type === 'rebalanceFailed') failed.push(event.error)
    })
    await pool.start()
    const units = [...pool.units].sort()
    await pool.close({ timeoutMs: 1_000 })
    await leaser.close({ timeoutMs: 1_000 })
    expect(failed).toEqual([])
    expect(units).toEqual(['a', 'b'])
  })
})

describe("a backend's maxStateBytes is read once, at construction", () => {
  test('a getter that answers otherwise later changes nothing', async () => {
    const memory = new MemoryBackend()
    let reads = 0
    const capabilities = Object.create(memory.capabilities, {
      maxStateBytes: { get: () => (++reads === 1 ? 10 : 0) },
    })
    const backend = Object.defineProperty(new ForwardingBackend(memory), 'capabilities', {
      value: capabilities,
    })
    const leaser = new Leaser({ backend, ttlMs: 30_000 })
    const lease = await leaser.acquire('job')
    await lease.checkpoint(new Uint8Array(5))
    await expect(lease.checkpoint(new Uint8Array(11))).rejects.toThrow(/at most 10/)
    expect(reads).toBe(1)
    await leaser.close()
  })

  test('a backend that declares none is refused at construction', () => {
    const memory = new MemoryBackend()
    const { maxStateBytes: _, ...capabilities } = memory.capabilities
    const backend = Object.defineProperty(new ForwardingBackend(memory), 'capabilities', {
      value: capabilities,
    })
    expect(() => new Leaser({ backend, ttlMs: 30_000 })).toThrow(/capabilities.maxStateBytes must be/)
  })
})

test('a String object as the units is refused as a plain string is: it iterates its characters', async () => {
  const leaser = new Leaser({ backend: new MemoryBackend(), ttlMs: 30_000, holderId: 'm1' })
  const failed: unknown[] = []
  let pool: LeasePool | undefined
  try {
    pool = new LeasePool({
      leaser,
      group: 'g',
      units: () => new String('ab') as unknown as string[],
      handler: async () => undefined,
    })
    pool.on((event) => {
      if (event.type === 'rebalanceFailed') failed.push(event.error)
    })
    await pool.start()
    expect([...pool.units]).toEqual([])
    expect(failed.length).toBeGreaterThan(0)
    expect(isInvalidArgumentError(failed[0])).toBe(true)
  } finally {
    await pool?.close({ timeoutMs: 1_000 })
    await leaser.close({ timeoutMs: 1_000 })
  }
})
