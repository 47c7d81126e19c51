import { MemoryBackend } from '@worklease/memory'
import {
  type Backend,
  type CallOptions,
  type CheckpointOptions,
  createLeaseRecord,
  FencedError,
  isInvalidArgumentError,
  isLeaseHeldError,
  LeaseHeldError,
  type LeaseRecord,
  type ListOptions,
} from '@worklease/spec'
import { ForwardingBackend } from '@worklease/testkit'
import { describe, expect, test } from 'vitest'
import {
  isLeaseEndedError,
  isLeaseLostError,
  jsonCodec,
  type LeaseLostError,
  Leaser,
  type LeaserOptions,
} from '../src/index.js'
import { ManualTime } from './manual-time.js'
import {
  collectUncaughtExceptions,
  collectUnhandledRejections,
  DEADLINE,
  INTERVAL,
  predecessorOf,
  refusingTimers,
  requiredOnly,
  setup,
  TTL,
  track,
} from './setup.js'

/**
 * A Leaser over a hand-made backend: attempts abandoned at 100 ms, and random() = 0.5, so backoffs are
 * half their cap (25, 50, 100, ... ms).
 */
function quickLeaser(backend: Backend, time: ManualTime, options: Partial<LeaserOptions> = {}): Leaser {
  return new Leaser({
    backend,
    ttlMs: TTL,
    holderId: 'worker-a',
    timers: time,
    callTimeoutMs: 100,
    random: () => 0.5,
    ...options,
  })
}

/** Unhandled rejections seen during one test. */
const unhandled = collectUnhandledRejections()
/** Uncaught exceptions seen during one test: what runs later reports the bugs of user code so. */
const uncaught = collectUncaughtExceptions()

/** Declares only what every backend has: no list, no renewMany, no acquireWithCheckpoint. */
class WithoutOptional extends ForwardingBackend {
  override get capabilities() {
    return requiredOnly(this.inner.capabilities)
  }
}

/** Records, in order, the method and signal of every call but acquire and renew. */
class SignalRecording extends ForwardingBackend {
  readonly signals: [method: string, signal: unknown][] = []
  override async checkpoint(
    record: LeaseRecord,
    state: Uint8Array,
    ttlMs: number,
    options?: CheckpointOptions,
  ) {
    this.signals.push(['checkpoint', options?.signal])
    return super.checkpoint(record, state, ttlMs, options)
  }
  override async readCheckpoint(record: LeaseRecord, options?: CallOptions) {
    this.signals.push(['readCheckpoint', options?.signal])
    return super.readCheckpoint(record, options)
  }
  override async renewMany(records: readonly LeaseRecord[], ttlMs: number, options?: CallOptions) {
    this.signals.push(['renewMany', options?.signal])
    return super.renewMany(records, ttlMs, options)
  }
  override async release(record: LeaseRecord, options?: CallOptions) {
    this.signals.push(['release', options?.signal])
    return super.release(record, options)
  }
  override async list(options?: ListOptions) {
    this.signals.push(['list', options?.signal])
    return super.list(options)
  }
  /** Each method called, and whether every call of it carried an AbortSignal. */
  signalled(): Record<string, boolean> {
    const seen: Record<string, boolean> = {}
    for (const [method, signal] of this.signals)
      seen[method] = (seen[method] ?? true) && signal instanceof AbortSignal
    return seen
  }
}

/** The first acquire takes the lease at once but answers only `lateMs` later; every later one hangs. */
class FirstReplyLate extends SignalRecording {
  acquires = 0
  constructor(
    inner: Backend,
    private readonly time: ManualTime,
    private readonly lateMs: number,
  ) {
    super(inner)
  }
  override async acquire(workId: string, holderId: string, ttlMs: number) {
    if (++this.acquires > 1) return new Promise<never>(() => {})
    const record = await super.acquire(workId, holderId, ttlMs)
    await this.time.sleep(this.lateMs)
    return record
  }
}

/** The next holder gets 'job' at once, after a clean end: nothing of ours was left to expire. */
async function expectFreedCleanly(store: Backend): Promise<void> {
  const next = await store.acquire('job', 'worker-b', TTL)
  expect(next.fencingToken).toBe(2n)
  expect((await store.readCheckpoint(next)).cleanHandoff).toBe(true)
}

describe('close ends leases locally first', () => {
  test('every signal is aborted and held is false before the store hears of a release', async () => {
    const { time, leaser, memory } = setup()
    const seenAtRelease: { aborted: boolean; held: boolean }[] = []
    const a = await leaser.acquire('a')
    const b = await leaser.acquire('b')
    const leases = [a, b]
    const original = memory.release.bind(memory)
    memory.release = (record, options) => {
      const lease = leases.find((l) => l.workId === record.workId)!
      seenAtRelease.push({ aborted: lease.signal.aborted, held: lease.held })
      return original(record, options)
    }
    const closing = leaser.close()
    // Synchronously, before any round trip.
    expect(leases.map((l) => l.signal.aborted)).toEqual([true, true])
    expect(leases.map((l) => l.held)).toEqual([false, false])
    await time.until(closing)
    expect(seenAtRelease).toEqual([
      { aborted: true, held: false },
      { aborted: true, held: false },
    ])
  })

  test('close waits for a run callback to settle before it releases that lease', async () => {
    const { time, leaser, backend } = setup()
    const steps: string[] = []
    const running = track(
      leaser.run('job', async (lease) => {
        await new Promise((resolve) => lease.signal.addEventListener('abort', resolve))
        steps.push('callback saw the abort')
        await time.sleep(100) // winds down its current step
        steps.push(`callback settled, release calls so far: ${backend.calls.release}`)
      }),
    )
    await time.advance(10)
    const closing = track(leaser.close())
    await time.advance(99)
    expect(backend.calls.release).toBe(0)
    await time.advance(1)
    await time.advance(0)
    expect(steps).toEqual(['callback saw the abort', 'callback settled, release calls so far: 0'])
    expect(backend.calls.release).toBe(1)
    expect(closing.settled).toBe(true)
    expect((running.error as LeaseLostError).reason).toBe('closed')
  })

  test('a run callback that ignores its signal past the close timeout: its lease is left to expire', async () => {
    const { time, leaser, backend, other } = setup()
    track(leaser.run('job', () => time.sleep(10 * TTL)))
    await time.advance(10)
    const closing = track(leaser.close({ timeoutMs: 300 }))
    await time.advance(300)
    expect(closing.settled).toBe(true)
    expect(backend.calls.release).toBe(0)
    // Not released: the successor sees an unclean handoff, which is the truth.
    await time.advance(TTL)
    const successor = await other.acquire('job', 'worker-b', TTL)
    expect((await other.readCheckpoint(successor)).cleanHandoff).toBe(false)
  })
})

describe('acquire with a timeoutMs shorter than one round trip', () => {
  test('a free lease is acquired: the timeout bounds the waiting, not the first round trip', async () => {
    const { time, leaser, backend, other } = setup()
    backend.setLatency(100, 'acquire')
    const acquiring = track(leaser.acquire('job', { timeoutMs: 50 }))
    await time.advance(100)
    expect(acquiring.error).toBeUndefined()
    expect(acquiring.value?.fencingToken).toBe(1n)
    await acquiring.value!.release()
    // No token was burned by a take-and-release in the background.
    expect((await other.acquire('job', 'worker-b', TTL)).fencingToken).toBe(2n)
    expect(backend.calls.acquire).toBe(1)
  })

  test('on a held lease it still rejects with LEASE_HELD once the first reply came', async () => {
    const { time, leaser, backend, other } = setup()
    await other.acquire('job', 'worker-b', 60_000)
    backend.setLatency(100, 'acquire')
    const acquiring = track(leaser.acquire('job', { wait: true, timeoutMs: 50 }))
    await time.advance(100)
    expect(isLeaseHeldError(acquiring.error)).toBe(true)
    expect(backend.calls.acquire).toBe(1)
  })
})

// Found by a review of session 43's cheaper op queue and release: the queue let go of the process
// from a reaction on the promise the caller holds (marking it handled), and the release's first
// attempt left the retry loop's try.
describe('what the op queue and the release keep of their contract', () => {
  test('a checkpoint nobody awaits that fails is still an unhandled rejection', async () => {
    const { leaser, backend } = setup()
    const lease = await leaser.acquire('job-dropped')
    backend.failNext('checkpoint', 1, new FencedError())
    void lease.checkpoint(new Uint8Array([1]))
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve))
    expect(unhandled).toHaveLength(1)
    expect(isLeaseLostError(unhandled[0])).toBe(true)
    await leaser.close()
    unhandled.length = 0
  })

  test("timers that throw as a release's call is timed: an attempt that failed, retried, and the release lands", async () => {
    const time = new ManualTime()
    let throwNext = false
    let thrown = false
    const timers = {
      now: () => time.now(),
      wallNow: () => time.wallNow(),
      setTimeout: (callback: () => void, ms: number) => {
        if (throwNext) {
          throwNext = false
          thrown = true
          throw new Error('timers refused')
        }
        return time.setTimeout(callback, ms)
      },
      clearTimeout: (handle: unknown) => time.clearTimeout(handle),
    }
    const { leaser, other } = setup({ time, timers })
    const lease = await leaser.acquire('job')
    // Past the acquire's call signal slice (a sixteenth of the call timeout), before the first
    // renewal: the release's call starts a new slice, and arms its timer.
    await time.advance(INTERVAL / 2)
    throwNext = true
    const released = track(lease.release())
    await time.advance(DEADLINE)
    expect(thrown).toBe(true)
    expect(released.settled && !released.rejected).toBe(true)
    const next = await other.acquireWithCheckpoint!('job', 'worker-b', TTL)
    expect(next.checkpoint.cleanHandoff).toBe(true)
    await leaser.close()
  })
})

describe('third-party backends that break the Promise contract', () => {
  const variants = [
    [
      'throws synchronously',
      () => {
        throw new Error('sync failure')
      },
    ],
    ['returns a non-promise', () => undefined],
  ] as const

  test.each(variants)(
    'a release that %s when freeing a late acquire: no unhandled rejection',
    async (_, release) => {
      const { time, memory } = setup()
      let slowCalls = 1
      const backend: Backend = {
        capabilities: requiredOnly(memory.capabilities),
        acquire: async (workId, holderId, ttlMs) => {
          if (slowCalls-- > 0) await time.sleep(110)
          return memory.acquire(workId, holderId, ttlMs)
        },
        renew: (...args) => memory.renew(...args),
        checkpoint: (...args) => memory.checkpoint(...args),
        release: release as unknown as Backend['release'],
        readCheckpoint: (...args) => memory.readCheckpoint(...args),
      }
      // random() = 0.5: the retry goes out at 125 ms, after the late acquire landed.
      const leaser = quickLeaser(backend, time)
      const acquiring = track(leaser.acquire('job', { wait: true }))
      await time.advance(3 * TTL)
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(unhandled).toEqual([])
      expect(acquiring.settled).toBe(true)
    },
  )

  test.each(variants)(
    'a release that %s in lease.release and close: no unhandled rejection',
    async (_, release) => {
      const { time, memory } = setup()
      const backend: Backend = {
        capabilities: requiredOnly(memory.capabilities),
        acquire: (...args) => memory.acquire(...args),
        renew: (...args) => memory.renew(...args),
        checkpoint: (...args) => memory.checkpoint(...args),
        release: release as unknown as Backend['release'],
        readCheckpoint: (...args) => memory.readCheckpoint(...args),
      }
      const leaser = new Leaser({ backend, ttlMs: TTL, holderId: 'worker-a', timers: time })
      const a = await leaser.acquire('a')
      await leaser.acquire('b')
      const released = track(a.release())
      const closing = track(leaser.close())
      await time.advance(2 * TTL)
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(unhandled).toEqual([])
      expect(released.settled && !released.rejected).toBe(true)
      expect(closing.settled && !closing.rejected).toBe(true)
      expect(time.pending).toBe(0)
    },
  )
})

describe('a release retried after a lost reply', () => {
  test('answering FENCED is "released, outcome unknown": run resolves with the result', async () => {
    const { time, leaser, backend, named } = setup()
    backend.loseNextReplies('release')
    const running = track(leaser.run('job', async () => 'result'))
    await time.advance(100)
    expect(backend.calls.release).toBe(2)
    expect(running.error).toBeUndefined()
    expect(running.value).toBe('result')
    expect(named('lost')).toHaveLength(0)
  })

  test("revoked during run, then a first release that failed: the retry's FENCED is the loss, not a release", async () => {
    const { time, leaser, backend, memory, named } = setup()
    const running = track(
      leaser.run('job', async () => {
        await memory.revoke('job')
        // Fails before reaching the store: its outcome is unknown to the Lease, which tries again.
        backend.failNext('release')
        return 'result'
      }),
    )
    await time.advance(200)
    expect(backend.calls.release).toBe(2)
    // As without the failed first attempt: run rejects, the lease was taken away while it ran.
    expect({
      value: running.value,
      loss: isLeaseLostError(running.error) ? running.error.reason : running.error,
      released: named('released').map((e) => e.event.clean),
      lost: named('lost').map((e) => e.event.reason),
    }).toEqual({ value: undefined, loss: 'fenced', released: [], lost: ['fenced'] })
  })

  test("taken by a successor whose clock runs ahead, then a first release that failed: the retry's FENCED is the loss", async () => {
    const { time, leaser, backend, named, ahead } = setup()
    const running = track(
      leaser.run('job', async () => {
        await ahead.acquire('job', 'worker-b', TTL)
        backend.failNext('release')
        return 'result'
      }),
    )
    await time.advance(200)
    expect(backend.calls.release).toBe(2)
    expect({
      value: running.value,
      loss: isLeaseLostError(running.error) ? running.error.reason : running.error,
      released: named('released').map((e) => e.event.clean),
    }).toEqual({ value: undefined, loss: 'fenced', released: [] })
  })

  test("a retry's FENCED that a failed listing cannot settle counts as released, as without list", async () => {
    const { time, store, memory } = setup()
    // The first release lands and its reply is lost; every listing fails.
    class NoListing extends ForwardingBackend {
      releases = 0
      lists = 0
      override async release(record: LeaseRecord, options?: CallOptions) {
        const first = ++this.releases === 1
        await super.release(record, options)
        if (first) throw Object.assign(new Error('reply lost'), { code: 'ECONNRESET' })
      }
      override list(): Promise<never> {
        this.lists++
        return Promise.reject(Object.assign(new Error('store down'), { code: 'ECONNRESET' }))
      }
    }
    const backend = new NoListing(memory)
    const leaser = quickLeaser(backend, time)
    const lost: unknown[] = []
    leaser.on('lost', (event) => lost.push(event))
    const running = track(leaser.run('job', async () => 'result'))
    await time.advance(200)
    expect({ releases: backend.releases, lists: backend.lists }).toEqual({ releases: 2, lists: 1 })
    expect(running.value).toBe('result')
    expect(lost).toEqual([])
    expect(store.leases.get('job')?.released).toBe(true)
  })

  test('every store call a lease makes hands the driver a signal to stop on, the listing included', async () => {
    const time = new ManualTime()
    // The first release lands and its reply is lost: the retry's FENCED is settled by a listing.
    class FirstReleaseReplyLost extends SignalRecording {
      releases = 0
      override async release(record: LeaseRecord, options?: CallOptions) {
        const first = ++this.releases === 1
        await super.release(record, options)
        if (first) throw Object.assign(new Error('reply lost'), { code: 'ECONNRESET' })
      }
    }
    const backend = new FirstReleaseReplyLost(new MemoryBackend({ clock: time.wall }))
    const leaser = quickLeaser(backend, time)
    const lease = await leaser.acquire('job')
    await lease.checkpoint(new Uint8Array([1]))
    await lease.readCheckpoint()
    await time.advance(INTERVAL)
    const releasing = track(lease.release())
    await time.advance(200)
    expect(releasing.settled && !releasing.rejected).toBe(true)
    expect({ releases: backend.releases, loss: lease.lossError }).toEqual({ releases: 2, loss: undefined })
    expect(backend.signalled()).toEqual({
      checkpoint: true,
      readCheckpoint: true,
      renewMany: true,
      release: true,
      list: true,
    })
  })

  // Without list, nothing can correct a wrong guess that the first release landed (session 26).
  test.each([
    ['', (memory: Backend) => memory],
    [', also on a backend without list', (memory: Backend) => new WithoutOptional(memory)],
  ])('a FENCED on the first and only release attempt is still a takeover%s', async (_, wrap) => {
    const { time, leaser, backend, ahead } = setup({ wrap })
    const running = track(
      leaser.run('job', async () => {
        await ahead.acquire('job', 'worker-b', TTL)
        return 'result'
      }),
    )
    await time.advance(100)
    expect(backend.calls.release).toBe(1)
    expect(isLeaseLostError(running.error)).toBe(true)
    expect((running.error as LeaseLostError).reason).toBe('fenced')
  })
})

describe('an acquire whose reply was lost (unknown outcome)', () => {
  test('without wait: the retry finds its own lease (LEASE_HELD with holder = us) and uses it', async () => {
    const { time, leaser, backend, other } = setup()
    backend.loseNextReplies('acquire')
    const acquiring = track(leaser.acquire('job'))
    await time.advance(100)
    expect(acquiring.error).toBeUndefined()
    expect(acquiring.value?.fencingToken).toBe(1n)
    expect(backend.calls.acquire).toBe(2)
    // Confirmed at once with a renew, not left to the next interval.
    expect(backend.calls.renew).toBe(1)
    expect(acquiring.value?.held).toBe(true)
    await acquiring.value!.release()
    const next = await other.acquire('job', 'worker-b', TTL)
    expect(next.fencingToken).toBe(2n)
    expect((await other.readCheckpoint(next)).cleanHandoff).toBe(true)
  })

  test('with wait: the lease is used at once, not waited out for a ttl (no unclean handoff)', async () => {
    const { time, leaser, backend } = setup()
    backend.loseNextReplies('acquire')
    const acquiring = leaser.acquire('job', { wait: true })
    const took = await time.until(acquiring)
    const lease = await acquiring
    expect(took).toBeLessThan(100)
    expect(lease.fencingToken).toBe(1n)
    expect((await lease.readCheckpoint()).cleanHandoff).toBe(true)
  })

  test.each([
    ['while the retry is in flight', 100],
    ['while it waits to retry', 60],
  ])('the caller gave up %s: the lease its lost reply took is released, not orphaned', async (_, abortAt) => {
    const { time, leaser, backend, other } = setup()
    backend.loseNextReplies('acquire')
    // The first attempt lands at 50 ms and its reply is lost; the retry goes out at 75 and lands at 125.
    backend.setLatency(50, 'acquire')
    const controller = new AbortController()
    const acquiring = track(leaser.acquire('job', { signal: controller.signal }))
    await time.advance(abortAt)
    controller.abort(new Error('no longer wanted'))
    await time.advance(100)
    expect((acquiring.error as Error).message).toBe('no longer wanted')
    await expectFreedCleanly(other)
  })

  test('a late reply took the lease while the retry hung, then the caller gave up: that lease is freed at once', async () => {
    const time = new ManualTime()
    const memory = new MemoryBackend({ clock: time.wall })
    // Taken at 0, answered at 150: after the call timeout (100).
    const backend = new FirstReplyLate(new WithoutOptional(memory), time, 150)
    const leaser = quickLeaser(backend, time)
    const controller = new AbortController()
    const acquiring = track(leaser.acquire('job', { signal: controller.signal }))
    // Abandoned at 100, retried at 125 (it hangs), the first attempt's reply at 150 says it took the lease.
    await time.advance(160)
    expect({ acquires: backend.acquires, settled: acquiring.settled }).toEqual({
      acquires: 2,
      settled: false,
    })
    controller.abort(new Error('no longer wanted'))
    await time.advance(10)
    expect((acquiring.error as Error).message).toBe('no longer wanted')
    // Freed now, not left to expire at 1000; a read first, as the acquire brought no checkpoint.
    await expectFreedCleanly(memory)
    expect(backend.signals.map(([method, signal]) => [method, signal instanceof AbortSignal])).toEqual([
      ['readCheckpoint', true],
      ['release', true],
    ])
  })

  test('a reply that comes after the usable ttl is never handed out: that lease is freed, the acquire goes on', async () => {
    const time = new ManualTime()
    const memory = new MemoryBackend({ clock: time.wall })
    // Taken at 0, answered at 950: past ttl - margin (900).
    const backend = new FirstReplyLate(new WithoutOptional(memory), time, 950)
    const leaser = quickLeaser(backend, time, { retry: { maxAttempts: 100 } })
    const acquiring = track(leaser.acquire('job', { wait: true }))
    await time.advance(960)
    // Handed out, it would be a lease already past its local deadline, and one nobody releases.
    expect(acquiring.settled).toBe(false)
    await expectFreedCleanly(memory)
  })

  test('the caller gave up on its only attempt, whose reply was then lost: the lease it took is released', async () => {
    const { time, leaser, backend, other, store } = setup()
    // The attempt lands at once; its reply comes 50 ms later, as an error.
    backend.setReplyLatency(50, 'acquire')
    backend.loseNextReplies('acquire')
    const controller = new AbortController()
    const acquiring = track(leaser.acquire('job', { signal: controller.signal }))
    await time.advance(10)
    expect(store.leases.get('job')?.holderId).toBe('worker-a')
    controller.abort(new Error('no longer wanted'))
    await time.advance(10)
    expect((acquiring.error as Error).message).toBe('no longer wanted')
    // Well within the ttl: the Leaser asked once more, found its own lease and released it.
    await time.advance(300)
    expect(backend.calls.acquire).toBe(2)
    const next = await other.acquire('job', 'worker-b', TTL)
    expect((await other.readCheckpoint(next)).cleanHandoff).toBe(true)
  })

  describe('a lease nobody will use, taken after a crash, is left to expire: the crash stays unclean', () => {
    /** The predecessor checkpointed 'page 3' and crashed: its lease expired, never released. */
    async function afterACrash(setupOptions: Parameters<typeof setup>[0] = {}) {
      const fixture = setup(setupOptions)
      await predecessorOf(fixture, 'job')
      return fixture
    }

    /** An acquire of 'job' whose caller gives up after 10 ms; what it settled with `settleMs` later. */
    async function givenUp(fixture: Awaited<ReturnType<typeof afterACrash>>, settleMs: number) {
      const controller = new AbortController()
      const acquiring = track(fixture.leaser.acquire('job', { signal: controller.signal }))
      await fixture.time.advance(10)
      controller.abort(new Error('no longer wanted'))
      await fixture.time.advance(settleMs)
      return acquiring
    }

    /** What the successor reads once the orphan's ttl is over: the crash, not a clean handoff. */
    async function successorReads({ time, other, store }: Awaited<ReturnType<typeof afterACrash>>) {
      expect(store.leases.get('job')?.released).toBe(false)
      await time.advance(TTL + 1)
      const { record, checkpoint } = await other.acquireWithCheckpoint('job', 'worker-b', TTL)
      return { token: record.fencingToken, ...checkpoint }
    }
    const crashRead = { token: 3n, state: new TextEncoder().encode('page 3'), cleanHandoff: false }

    test('an attempt the caller gave up on lands late (its checkpoint said unclean)', async () => {
      const fixture = await afterACrash()
      fixture.backend.setReplyLatency(50, 'acquire')
      const acquiring = await givenUp(fixture, 100)
      expect((acquiring.error as Error).message).toBe('no longer wanted')
      expect(fixture.backend.calls.release).toBe(0)
      expect(await successorReads(fixture)).toEqual(crashRead)
    })

    test('an attempt close() cut short lands late', async () => {
      const fixture = await afterACrash()
      fixture.backend.setReplyLatency(50, 'acquire')
      const acquiring = track(fixture.leaser.acquire('job'))
      await fixture.time.advance(1)
      const closing = track(fixture.leaser.close())
      await fixture.time.advance(100)
      expect(acquiring.rejected).toBe(true)
      expect(closing.settled).toBe(true)
      expect(await successorReads(fixture)).toEqual(crashRead)
    })

    test('a lost reply found again through LEASE_HELD (no checkpoint came with it: read, then kept)', async () => {
      const fixture = await afterACrash()
      fixture.backend.setReplyLatency(50, 'acquire')
      fixture.backend.loseNextReplies('acquire')
      const acquiring = await givenUp(fixture, 300)
      expect((acquiring.error as Error).message).toBe('no longer wanted')
      expect(fixture.backend.calls.acquire).toBe(2)
      expect(fixture.backend.calls.release).toBe(0)
      expect(await successorReads(fixture)).toEqual(crashRead)
    })

    test('without acquireWithCheckpoint, a late attempt is read before it is released or kept', async () => {
      const fixture = await afterACrash({ prefetchCheckpoint: false })
      fixture.backend.setReplyLatency(50, 'acquire')
      await givenUp(fixture, 100)
      expect(fixture.backend.calls.readCheckpoint).toBe(1)
      expect(fixture.backend.calls.release).toBe(0)
      expect(await successorReads(fixture)).toEqual(crashRead)
    })
  })

  test('a lease this Leaser holds, or abandoned, is never adopted twice (leases are not reentrant)', async () => {
    const { time, leaser, backend } = setup()
    const held = await leaser.acquire('held')
    backend.failNext('acquire')
    const again = track(leaser.acquire('held'))
    await time.advance(100)
    expect(isLeaseHeldError(again.error)).toBe(true)
    const abandoned = await leaser.acquire('abandoned')
    abandoned.abandon()
    backend.failNext('acquire')
    const retaken = track(leaser.acquire('abandoned'))
    await time.advance(100)
    expect(isLeaseHeldError(retaken.error)).toBe(true)
    expect(held.held).toBe(true)
  })

  // Found by `pnpm torture --backend mariadb --seconds 180 --seed 443671444 --pool-members 2`: a pool
  // member re-adopted, at the same token, a unit lease it had lost, a late checkpoint having extended it.
  test('a lost lease is never adopted again, though a call that landed late extended it past a ttl', async () => {
    const { time, leaser, backend, memory } = setup()
    const lease = await leaser.acquire('job')
    backend.setDown(true, 'hang')
    await time.advance(DEADLINE)
    expect(lease.held).toBe(false)
    // A checkpoint that was in flight at the loss reaches the store just before a ttl has passed since.
    await time.advance(TTL - 1)
    await memory.checkpoint(lease.record, new Uint8Array([1]), TTL)
    backend.setDown(false)
    await time.advance(2)
    // Its first attempt's outcome unknown, the acquire retries and meets LEASE_HELD naming this holder.
    backend.failNext('acquire')
    const again = track(leaser.acquire('job'))
    await time.advance(200)
    // Adopting it would give a new run the token of the run that was told it lost the lease.
    expect(again.value?.fencingToken).not.toBe(lease.fencingToken)
    expect(isLeaseHeldError(again.error)).toBe(true)
  })

  // Found by `pnpm torture --backend mysql97 --seed 2113158753`: two acquires of one workId by one
  // Leaser overlapped; the first had given up with an attempt still in flight, and that attempt's
  // LEASE_HELD named the token the second acquire had just taken.
  describe('two acquires of one workId overlap, one attempt meeting the lease the other took', () => {
    /**
     * A's first attempt fails (outcome unknown) and its retry reaches the store at 225 ms, where it
     * meets the lease B's attempt took at 60 ms, whose reply only comes back at 360 ms.
     */
    async function overlap(a: { wait?: boolean; signal?: AbortSignal }) {
      const context = setup()
      const { time, leaser, backend } = context
      backend.failNext('acquire')
      const first = track(leaser.acquire('job', a))
      backend.setLatency(200, 'acquire')
      await time.advance(50)
      return {
        ...context,
        first,
        startSecond: (beforeItsReply?: () => Promise<void>) => second(context, beforeItsReply),
      }
    }
    async function second(
      { time, leaser, backend }: ReturnType<typeof setup>,
      beforeItsReply = async () => {},
    ) {
      backend.setLatency(0, 'acquire').setReplyLatency(300, 'acquire')
      const promise = leaser.acquire('job')
      const acquiring = track(promise)
      await time.advance(40)
      backend.setReplyLatency(0, 'acquire')
      await beforeItsReply()
      // Judged the moment it settles: a lease handed out unheld is lost at its first renewal.
      await time.until(promise).catch(() => undefined)
      return acquiring
    }

    test('the first gave up: it never releases the lease the second hands out', async () => {
      const controller = new AbortController()
      const { time, first, startSecond, other } = await overlap({ signal: controller.signal })
      controller.abort(new Error('no longer wanted'))
      await time.advance(1)
      expect((first.error as Error).message).toBe('no longer wanted')
      const acquiring = await startSecond()
      expect(acquiring.value?.held).toBe(true)
      // Held means nobody else can take it.
      const taker = await other.acquire('job', 'worker-b', TTL).then(
        (record) => record,
        (error: unknown) => error,
      )
      expect(isLeaseHeldError(taker)).toBe(true)
    })

    test('both still wait: one token is handed out once, never to both', async () => {
      const { first, startSecond } = await overlap({ wait: true })
      const acquiring = await startSecond()
      expect(first.value?.held).toBe(true)
      expect(acquiring.value?.fencingToken).not.toBe(first.value?.fencingToken)
      expect(isLeaseHeldError(acquiring.error)).toBe(true)
    })

    test('the first released it before the second heard back: the second does not hand it out', async () => {
      const { time, first, startSecond, other } = await overlap({ wait: true })
      const acquiring = await startSecond(async () => {
        await time.advance(200)
        expect(first.value?.held).toBe(true)
        await first.value!.release()
      })
      if (acquiring.value?.held) {
        const taker = await other.acquire('job', 'worker-b', TTL).catch((error: unknown) => error)
        expect(isLeaseHeldError(taker)).toBe(true)
      }
      expect(acquiring.value?.fencingToken).not.toBe(first.value?.fencingToken)
    })
  })

  test('a waiter whose late-found lease another acquire of ours handed out keeps its backoff', async () => {
    // Acquire replies are handed back by the test: each attempt waits in `attempts` until then.
    const time = new ManualTime()
    const attempts: { resolve: (record: LeaseRecord) => void; reject: (error: unknown) => void }[] = []
    let sent = 0
    const memory = new MemoryBackend({ clock: time.wall })
    const backend: Backend = {
      capabilities: requiredOnly(memory.capabilities),
      acquire: () => {
        sent++
        return new Promise<LeaseRecord>((resolve, reject) => attempts.push({ resolve, reject }))
      },
      renew: async () => undefined,
      checkpoint: async () => undefined,
      release: async () => undefined,
      readCheckpoint: async () => ({ state: null, cleanHandoff: true }),
    }
    const leaser = quickLeaser(backend, time)
    const record = createLeaseRecord('job', 'worker-a', 1n, time.wall.now() + TTL)
    const heldByUs = () =>
      new LeaseHeldError(undefined, {
        holder: { holderId: 'worker-a', fencingToken: 1n, expiresAt: record.expiresAt, expiresInMs: 60_000 },
      })
    const first = track(leaser.acquire('job', { wait: true }))
    const second = track(leaser.acquire('job', { wait: true }))
    // Both first attempts time out (outcome unknown); both retry and wait for those replies.
    await time.advance(160)
    expect(attempts).toHaveLength(4)
    // The first's abandoned attempt took the lease; the second's met it, naming us: both found it.
    attempts[0]!.resolve(record)
    attempts[1]!.reject(heldByUs())
    await time.advance(0)
    attempts[2]!.reject(heldByUs())
    attempts[3]!.reject(heldByUs())
    await time.advance(0)
    // One of them handed it out; the other keeps waiting, for a lease held by us, with its backoff.
    const [winner, waiter] = first.settled ? [first, second] : [second, first]
    expect(winner.value?.fencingToken).toBe(1n)
    expect(waiter.settled).toBe(false)
    const sentBefore = sent
    for (let ms = 0; ms < 1_000; ms++) {
      for (const attempt of attempts.splice(0)) attempt.reject(heldByUs())
      await time.advance(1)
    }
    // 50, 100, 200, 400 ms of backoff (half their cap): a few attempts. A wake left aborted by the
    // late find made every wait a retry at once: one attempt a millisecond.
    expect(sent - sentBefore).toBeLessThanOrEqual(6)
    await leaser.close({ timeoutMs: 0 })
  })

  test('an abandoned attempt whose reply comes after its lease expired never displaces a later one', async () => {
    let calls = 0
    /**
     * The first attempt takes token 1 at once, and its reply comes back at 1,120 ms, long after the
     * acquire gave up on it (callTimeoutMs: 333) and after token 1 expired (1,000). The retries are
     * refused until then; the one sent at 1,108 takes token 2 at 1,128.
     */
    class Scripted extends ForwardingBackend {
      override async acquireWithCheckpoint(
        workId: string,
        holderId: string,
        ttlMs: number,
        options?: CallOptions,
      ) {
        if (++calls === 1) {
          const taken = await this.inner.acquireWithCheckpoint!(workId, holderId, ttlMs, options)
          await time.sleep(1_120)
          return taken
        }
        if (time.now() < 1_000) {
          throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
        }
        await time.sleep(20)
        return this.inner.acquireWithCheckpoint!(workId, holderId, ttlMs, options)
      }
    }
    const { time, store, leaser } = setup({
      wrap: (memory) => new Scripted(memory),
      retry: { maxAttempts: 20 },
    })
    const acquiring = track(leaser.acquire('job'))
    await time.advance(1_200)
    expect(store.leases.get('job')?.fencingToken).toBe(2n)
    expect(acquiring.value?.fencingToken).toBe(2n)
    expect(acquiring.value?.held).toBe(true)
  })

  test('two attempts of one acquire both took the lease: the newer token is handed out', async () => {
    let calls = 0
    /**
     * The first attempt takes token 1 at once; its reply comes at 400 ms, after the acquire gave up
     * on it (callTimeoutMs: 333) but well before its local deadline. The store's clock then steps a
     * ttl forward, so the retry (sent at 358) takes token 2; its reply comes at 418.
     */
    class Scripted extends ForwardingBackend {
      override async acquireWithCheckpoint(
        workId: string,
        holderId: string,
        ttlMs: number,
        options?: CallOptions,
      ) {
        const first = ++calls === 1
        if (!first) time.wallOffset += TTL
        const taken = await this.inner.acquireWithCheckpoint!(workId, holderId, ttlMs, options)
        await time.sleep(first ? 400 : 60)
        return taken
      }
    }
    const { time, store, leaser } = setup({ wrap: (memory) => new Scripted(memory) })
    const acquiring = track(leaser.acquire('job'))
    await time.advance(500)
    expect(calls).toBe(2)
    expect(store.leases.get('job')?.fencingToken).toBe(2n)
    expect(acquiring.value?.fencingToken).toBe(2n)
  })

  test('an attempt abandoned at callTimeoutMs that lands while the acquire still waits is used, not burnt', async () => {
    const { time, leaser, backend } = setup({ callTimeoutMs: 100 })
    backend.setLatency(110, 'acquire')
    const acquiring = track(leaser.acquire('job', { wait: true }))
    await time.advance(300)
    expect(acquiring.value?.fencingToken).toBe(1n)
  })
})

describe('checkpoints are bounded and never starve renewal', () => {
  test('a hung checkpoint: renewals still go out on time and the lease stays held', async () => {
    const { time, leaser, backend, named } = setup({ checkpointTimeoutMs: 200 })
    const lease = await leaser.acquire('job')
    backend.setLatency(60_000, 'checkpoint') // hangs until its signal aborts
    await time.advance(10)
    const checkpoint = track(lease.checkpoint(new TextEncoder().encode('state')))
    await time.advance(323) // t = 333: the renew is due
    expect(backend.calls.renew).toBe(1)
    await time.advance(5 * TTL)
    expect(lease.held).toBe(true)
    expect(named('lost')).toHaveLength(0)
    // The checkpoint gave up after one lease lifetime of failed attempts, with the store's error.
    expect(checkpoint.rejected).toBe(true)
    expect(isLeaseLostError(checkpoint.error)).toBe(false)
  })

  test('every attempt of one checkpoint carries the same sequence, a later checkpoint a larger one', async () => {
    const { time, leaser, memory } = setup()
    const sequences: (number | undefined)[] = []
    const original = memory.checkpoint.bind(memory)
    let lose = 1
    memory.checkpoint = async (record, state, ttlMs, options) => {
      sequences.push(options?.sequence)
      await original(record, state, ttlMs, options)
      if (lose-- > 0) throw new Error('reply lost')
    }
    const lease = await leaser.acquire('job')
    const first = lease.checkpoint(new TextEncoder().encode('1'))
    await time.until(first)
    await lease.checkpoint(new TextEncoder().encode('2'))
    expect(sequences).toHaveLength(3)
    expect(sequences[0]).toBeTypeOf('number')
    expect(sequences[1]).toBe(sequences[0])
    expect(sequences[2]).toBeGreaterThan(sequences[0]!)
  })
})

describe('takeover at the ttl', () => {
  test("a waiter sleeps until the crashed holder's expiry (plus a little), not a blind backoff", async () => {
    const { time, leaser, other, backend } = setup()
    await other.acquire('job', 'crashed', TTL)
    const waiting = leaser.acquire('job', { wait: true })
    const took = await time.until(waiting, 10_000, 1)
    expect((await waiting).fencingToken).toBe(2n)
    // ttl + jitter (at most 25 ms), with zero-latency round trips.
    expect(took).toBeGreaterThanOrEqual(TTL)
    expect(took).toBeLessThanOrEqual(TTL + 26)
    expect(backend.calls.acquire).toBeLessThanOrEqual(7)
  })

  test("the sleep never runs past the caller's timeout", async () => {
    const { time, leaser, other } = setup()
    await other.acquire('job', 'crashed', TTL)
    const waiting = track(leaser.acquire('job', { wait: true, timeoutMs: 800 }))
    await time.advance(800)
    expect(isLeaseHeldError(waiting.error)).toBe(true)
  })
})

// Found by a review (session 50).
describe('a Lease under faults found by review', () => {
  const unhandled = collectUnhandledRejections()

  /** Whether a setTimeout is arming a lease's backoff. */
  const inBackoff = () => new Error().stack?.includes('#backoff') === true

  /** Timers that throw once, at the next setTimeout after `state.armed` is set (of `ms` only, when given). */
  function throwingOnce(time: ManualTime, ms?: number) {
    const state = { armed: false, thrown: false }
    const timers = refusingTimers(time, (delay) => {
      if (!state.armed || (ms !== undefined && delay !== ms)) return false
      state.armed = false
      state.thrown = true
      return true
    })
    return { state, timers }
  }

  // The renewal's backoff rejected #renewOp, which nobody caught: renewals stopped for good (an
  // unhandled rejection) and the lease was lost at its deadline with the store healthy again.
  test("timers that throw as a renew's backoff is armed: renewed again all the same", async () => {
    const time = new ManualTime()
    // The first backoff: retry.initialDelayMs 50 ms, random 0.5: 25 ms.
    const { state, timers } = throwingOnce(time, 25)
    const { leaser, backend, named } = setup({ time, timers })
    const lease = await leaser.acquire('job')
    backend.failNext('renew', 1)
    state.armed = true
    await time.advance(3 * TTL)
    expect(state.thrown).toBe(true)
    expect(named('lost')).toEqual([])
    expect(lease.held).toBe(true)
    expect(unhandled).toEqual([])
    await time.until(leaser.close())
  })

  // The release's backoff rejected release(), documented never to reject, and it never retried: the
  // lease was left to expire, and the successor read cleanHandoff: false.
  test("timers that throw as a release's backoff is armed: release() retries and resolves", async () => {
    const time = new ManualTime()
    const { state, timers } = throwingOnce(time)
    const { leaser, backend, other } = setup({ time, timers })
    const lease = await leaser.acquire('job')
    await time.advance(INTERVAL / 4)
    // Armed a microtask after the failing call went out (its timeout armed): the next setTimeout
    // is the backoff's.
    backend.failNext('release', 1, () => {
      queueMicrotask(() => {
        state.armed = true
      })
      return new Error('store down')
    })
    const released = track(lease.release())
    await time.advance(DEADLINE)
    expect(state.thrown).toBe(true)
    expect(released).toMatchObject({ settled: true, rejected: false })
    expect(backend.calls.release).toBeGreaterThan(1)
    expect((await other.acquireWithCheckpoint!('job', 'worker-b', 1_000)).checkpoint.cleanHandoff).toBe(true)
  })

  // #lose ends the lease locally (the signal's listeners run) before it halts: an abandon() there
  // emitted `released` (abandoned), then the loss its `lost`.
  test('abandon() from an abort listener of a loss: the loss alone is reported', async () => {
    const { time, leaser, ahead, events } = setup()
    const lease = await leaser.acquire('job')
    lease.signal.addEventListener('abort', () => lease.abandon())
    // A successor whose clock runs ahead takes the lease; the next renew is FENCED.
    await ahead.acquire('job', 'worker-b', TTL)
    await time.advance(INTERVAL + 10)
    expect(lease.lossError?.reason).toBe('fenced')
    expect(events.filter((e) => e.name === 'lost' || e.name === 'released').map((e) => e.name)).toEqual([
      'lost',
    ])
  })

  // close() between an acquire's reply and its adoption released the lease through a Lease object,
  // which reported `released` for a lease never reported `acquired`.
  test('close() while an acquire is being adopted: no released without its acquired', async () => {
    const { time, leaser, events, backend } = setup()
    let closing: Promise<void> | undefined
    leaser.on('acquired', () => {
      closing ??= leaser.close()
    })
    const a = leaser.acquire('job-a').catch((e: unknown) => e)
    const b = leaser.acquire('job-b').catch((e: unknown) => e)
    await time.until(Promise.all([a, b]))
    await time.until(closing!)
    const seen = events
      .filter((e) => e.name === 'acquired' || e.name === 'released')
      .map((e) => `${e.name}:${e.event.workId}`)
    for (const released of seen.filter((e) => e.startsWith('released:'))) {
      expect(seen.indexOf(`acquired:${released.slice('released:'.length)}`)).toBeGreaterThanOrEqual(0)
    }
    // Each lease taken is released all the same, reported or not.
    expect((await backend.list!()).leases.every((listed) => listed.released)).toBe(true)
  })

  // The codec and the size check ran first: a lease released or lost reported a bad state instead.
  test('checkpoint() on a lease released or lost rejects with its end, the codec not called', async () => {
    let encodes = 0
    const json = jsonCodec<unknown>()
    const codec = {
      encode: (state: unknown) => {
        encodes++
        return json.encode(state)
      },
      decode: json.decode,
    }
    const { time, leaser, ahead } = setup({ codec: codec as never })
    const released = await leaser.acquire('job')
    await time.until(released.release())
    const afterRelease = await released.checkpoint(undefined as never).catch((e: unknown) => e)
    expect(isInvalidArgumentError(afterRelease)).toBe(false)
    expect(isLeaseEndedError(afterRelease)).toBe(true)
    expect(encodes).toBe(0)
    const lost = await leaser.acquire('other')
    await ahead.acquire('other', 'worker-b', TTL)
    await time.advance(INTERVAL + 10)
    expect(lost.lossError?.reason).toBe('fenced')
    expect(
      isLeaseLostError(await lost.checkpoint({ big: 'x'.repeat(100) } as never).catch((e: unknown) => e)),
    ).toBe(true)
    expect(encodes).toBe(0)
    await time.until(leaser.close())
  })

  // Review of the fix above: a wait that could never be armed retried the renew at once, again and
  // again, a tight loop of calls to a failing store until the deadline.
  test('backoff timers that always throw: a failing renew is not retried in a tight loop', async () => {
    const time = new ManualTime()
    // Every backoff's wait refuses to be armed; the other timers work.
    const timers = refusingTimers(time, inBackoff)
    const renewsAt: number[] = []
    const { leaser } = setup({
      time,
      timers,
      wrap: (memory) =>
        new (class extends ForwardingBackend {
          override async renew(_record: LeaseRecord, _ttlMs: number, _options?: CallOptions) {
            renewsAt.push(time.now())
            throw Object.assign(new Error('store down'), { code: 'ECONNRESET' })
          }
        })(memory),
    })
    await leaser.acquire('job')
    await time.advance(INTERVAL + 1)
    expect(renewsAt.filter((at) => at === renewsAt[0]).length).toBeLessThanOrEqual(2)
    expect(unhandled).toEqual([])
    await time.until(leaser.close())
  })

  // Review of the fix above: the count of releases close() waits for went up before the Lease was
  // made, so a constructor that threw left close() waiting out its whole timeout.
  test('a lease adopted as close() runs whose Lease cannot be made: close() is not held up', async () => {
    const time = new ManualTime()
    let closing: Promise<void> | undefined
    let refused = 0
    // Timers refuse a Lease made once the Leaser closed (a lease adopted as close() ran).
    const timers = refusingTimers(time, () => {
      const refuses = closing !== undefined && new Error().stack?.includes('at new Lease') === true
      if (refuses) refused++
      return refuses
    })
    const { leaser } = setup({ time, timers })
    leaser.on('acquired', () => {
      closing ??= leaser.close({ timeoutMs: 10_000 })
    })
    const a = leaser.acquire('job-a').catch((e: unknown) => e)
    const b = leaser.acquire('job-b').catch((e: unknown) => e)
    await time.until(Promise.all([a, b]))
    expect(refused).toBeGreaterThan(0)
    expect(await time.until(closing!, 20_000)).toBeLessThan(1_000)
  })

  // Review of the fix above (session 51): the constructor's throw left the store's lease held, with no
  // Lease to release it, and the acquire rejected with the timers' error, not LEASER_CLOSED.
  test('a lease adopted as close() runs whose Lease cannot be made is let go of', async () => {
    const time = new ManualTime()
    let closing: Promise<void> | undefined
    const timers = refusingTimers(
      time,
      () => closing !== undefined && new Error().stack?.includes('at new Lease') === true,
    )
    const { leaser, other } = setup({ time, timers })
    leaser.on('acquired', () => {
      closing ??= leaser.close({ timeoutMs: 10_000 })
    })
    const a = leaser.acquire('job-a').catch((e: unknown) => e)
    const b = leaser.acquire('job-b').catch((e: unknown) => e)
    await time.until(Promise.all([a, b]))
    await time.until(closing!, 20_000)
    expect(((await b) as { code?: string }).code).toBe('LEASER_CLOSED')
    expect((await other.acquire('job-b', 'worker-b', TTL)).fencingToken).toBe(2n)
  })

  // Review of the fix above: the release that gave up returned with the lease neither released nor
  // lost (no event, no lossError), and its deadline then reported a loss after release() resolved.
  test('backoff timers that always throw: release() resolves with the loss said, nothing after', async () => {
    const time = new ManualTime()
    const timers = refusingTimers(time, inBackoff)
    const { leaser, named } = setup({
      time,
      timers,
      wrap: (memory) =>
        new (class extends ForwardingBackend {
          override async release(_record: LeaseRecord, _options?: CallOptions) {
            throw Object.assign(new Error('store down'), { code: 'ECONNRESET' })
          }
        })(memory),
    })
    const lease = await leaser.acquire('job')
    await time.until(lease.release())
    expect(lease.lossError?.reason).toBe('deadline')
    expect(named('lost')).toHaveLength(1)
    expect(named('released')).toHaveLength(0)
    await time.advance(2 * TTL)
    expect(named('lost')).toHaveLength(1)
    expect(unhandled).toEqual([])
    await time.until(leaser.close())
  })
})

// Found by a review (session 51).
describe('an acquire under faults found by review', () => {
  /** A LEASE_HELD whose holder cannot be read: its getter throws, as a third-party backend's may. */
  function unreadableHolder(): LeaseHeldError {
    const held = new LeaseHeldError()
    Object.defineProperty(held, 'holder', {
      get() {
        throw new Error('holder getter threw')
      },
    })
    return held
  }

  // Floored, a bound under 2 ms made every delay 0: 200 polls of the store in 1 ms of injected time.
  test('retry bounded at 1 ms: a waiter still sleeps between polls', async () => {
    const time = new ManualTime()
    const { memory, other } = setup({ time })
    await other.acquire('job', 'worker-b', TTL)
    let polls = 0
    const backend = new (class extends WithoutOptional {
      override async acquire(workId: string, holderId: string, ttlMs: number) {
        polls++
        // A waiter that cannot sleep until the expiry: its backoff alone paces it.
        return super.acquire(workId, holderId, ttlMs).catch(() => {
          throw new LeaseHeldError()
        })
      }
    })(memory)
    const controller = new AbortController()
    const leaser = quickLeaser(backend, time, { retry: { initialDelayMs: 1, multiplier: 1 } })
    const waiting = track(leaser.acquire('job', { wait: true, signal: controller.signal }))
    // Aborted from a timer, so a loop that never lets time pass ends too (and fails below).
    time.setTimeout(() => controller.abort(new Error('stop')), 10)
    await time.advance(10)
    expect(waiting.rejected).toBe(true)
    expect(polls).toBeGreaterThan(1)
    expect(polls).toBeLessThanOrEqual(11)
  })

  // The holder was read unguarded: the wait ended with the getter's error, neither LEASE_HELD nor a
  // store failure.
  test('a LEASE_HELD whose holder cannot be read: the wait goes on as for one that names none', async () => {
    const time = new ManualTime()
    const { memory } = setup({ time })
    let refusals = 3
    const backend = new (class extends WithoutOptional {
      override async acquire(workId: string, holderId: string, ttlMs: number) {
        if (refusals-- > 0) throw unreadableHolder()
        return super.acquire(workId, holderId, ttlMs)
      }
    })(memory)
    const leaser = quickLeaser(backend, time)
    const acquired = track(leaser.acquire('job', { wait: true }))
    await time.advance(1_000)
    expect(acquired.value?.record.fencingToken).toBe(1n)
    expect(unhandled).toEqual([])
    await time.until(leaser.close())
  })

  // Read in the handler of a reply nobody awaited any more, the getter's throw was an unhandled
  // rejection.
  test('an abandoned attempt answers LEASE_HELD with an unreadable holder: nothing unhandled', async () => {
    const time = new ManualTime()
    const { memory } = setup({ time })
    let answer!: (error: unknown) => void
    const backend = new (class extends WithoutOptional {
      override acquire() {
        return new Promise<never>((_, reject) => {
          answer = reject
        })
      }
    })(memory)
    const leaser = quickLeaser(backend, time)
    const controller = new AbortController()
    const acquired = track(leaser.acquire('job', { signal: controller.signal }))
    await time.flush()
    controller.abort(new Error('caller gave up'))
    await time.flush()
    expect(acquired.rejected).toBe(true)
    answer(unreadableHolder())
    await time.flush()
    expect(unhandled).toEqual([])
    await time.until(leaser.close())
  })

  // The timeout was armed before the attempt was watched: a throw there left the attempt counted in
  // flight for good, and close() waited out its whole timeout.
  test('an attempt whose call timeout cannot be armed: close() is not held up', async () => {
    const time = new ManualTime()
    let refusals = 1
    const timers = refusingTimers(time, () => refusals-- > 0)
    const { leaser } = setup({ time, timers })
    const acquired = track(leaser.acquire('job'))
    await time.advance(200)
    expect(acquired.settled).toBe(true)
    expect(await time.until(leaser.close({ timeoutMs: 60_000 }), 120_000)).toBeLessThan(TTL)
    expect(unhandled).toEqual([])
  })

  // `adopted` was set before the Lease was made: a constructor that threw left the store's lease
  // held, with no Lease to renew or release it, for a whole ttl.
  test('a Lease that cannot be made after the store granted it: the lease is let go', async () => {
    const time = new ManualTime()
    // Timers refuse the Lease's own (its deadline), not the acquire's.
    const timers = refusingTimers(time, () => new Error().stack?.includes('at new Lease') === true)
    const { leaser, other } = setup({ time, timers })
    const acquired = track(leaser.acquire('job'))
    await time.advance(100)
    expect(acquired.rejected).toBe(true)
    expect(leaser.leases).toEqual([])
    await expectFreedCleanly(other)
    await time.until(leaser.close())
  })

  // Review of the fixes above (session 51): a Lease whose deadline watch was armed before its renew
  // timer was refused stayed watched, and reported lost a lease whose acquire had rejected.
  test('a Lease made only in part is not reported lost', async () => {
    const time = new ManualTime()
    const timers = refusingTimers(time, () => {
      const stack = new Error().stack ?? ''
      return stack.includes('at new Lease') && !stack.includes('#watch')
    })
    const { leaser, named } = setup({ time, timers })
    const acquired = track(leaser.acquire('job'))
    await time.advance(100)
    expect(acquired.rejected).toBe(true)
    await time.advance(3 * TTL)
    expect(named('lost')).toEqual([])
    await time.until(leaser.close())
  })

  // Review of the fixes above (session 51): the deadline wheel took itself for armed when its timer
  // was refused, and armed no timer again: a later lease whose renewals hung was told it was lost
  // only past the store's ttl.
  test("a Lease refused at its deadline watch: a later lease's deadline still holds", async () => {
    async function lossAfter(refuseOnce: boolean): Promise<number | undefined> {
      const time = new ManualTime()
      let refusals = refuseOnce ? 1 : 0
      const timers = refusingTimers(time, () => {
        if (refusals === 0 || new Error().stack?.includes('at new Lease') !== true) return false
        refusals--
        return true
      })
      const { leaser } = setup({
        time,
        timers,
        wrap: (memory) =>
          new (class extends ForwardingBackend {
            override renew() {
              return new Promise<never>(() => {})
            }
          })(memory),
      })
      const refused = track(leaser.acquire('job'))
      await time.advance(10)
      expect(refused.rejected).toBe(refuseOnce)
      const start = time.now()
      const lease = track(leaser.acquire('job-2'))
      await time.advance(10)
      let lostAt: number | undefined
      lease.value!.signal.addEventListener('abort', () => {
        lostAt = time.now() - start
      })
      await time.advance(5 * TTL)
      return lostAt
    }
    expect(await lossAfter(true)).toBe(await lossAfter(false))
  })

  // Review of the fixes above (session 51): close()'s own timeout, refused, rejected close() for good:
  // the leases were never abandoned nor the calls in flight aborted.
  test('close() whose timeout timers refuse still ends every lease, the refusal reported', async () => {
    const time = new ManualTime()
    const timers = refusingTimers(time, (delay) => delay === 5_000)
    const { leaser } = setup({
      time,
      timers,
      wrap: (memory) =>
        new (class extends ForwardingBackend {
          override release() {
            return new Promise<never>(() => {})
          }
        })(memory),
    })
    const lease = await time.until(leaser.acquire('job')).then(() => leaser.leases[0]!)
    const closing = track(leaser.close({ timeoutMs: 5_000 }))
    await time.advance(10)
    expect(closing.settled && !closing.rejected).toBe(true)
    expect(lease.held).toBe(false)
    await new Promise((resolve) => process.nextTick(resolve))
    expect(uncaught.map((error) => (error as Error).message)).toEqual(['timers refused'])
  })
})

// Found by a review (session 51).
describe('two acquires of one workId, one giving up with an unknown outcome', () => {
  /** Acquires land at once; while `hold`, their replies wait until `letGo()`. */
  class HeldReplies extends ForwardingBackend {
    hold = false
    readonly #waiting: (() => void)[] = []
    override async acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions) {
      const hold = this.hold
      const record = await this.inner.acquire(workId, holderId, ttlMs, options)
      if (hold) await new Promise<void>((resolve) => this.#waiting.push(resolve))
      return record
    }
    letGo() {
      for (const resume of this.#waiting.splice(0)) resume()
    }
  }

  // The background ask after A gave up found the lease B's attempt had taken (its reply still out),
  // took it for A's own and released it: B's token was burnt, B took another, and in between the
  // lease was anyone's.
  test("the lease found after A gave up is handed to B, not released under B's attempt", async () => {
    let held!: HeldReplies
    const { time, leaser, backend, store } = setup({
      prefetchCheckpoint: false,
      wrap: (memory) => {
        held = new HeldReplies(memory)
        return held
      },
    })
    backend.failNext('acquire') // A's only attempt: its outcome unknown (it never reached the store)
    const controller = new AbortController()
    const a = track(leaser.acquire('job', { signal: controller.signal }))
    await time.advance(1)
    held.hold = true
    const b = track(leaser.acquire('job', { wait: true }))
    await time.advance(1)
    expect(store.leases.get('job')?.fencingToken).toBe(1n)
    controller.abort(new Error('A gave up'))
    await time.advance(5)
    expect((a.error as Error).message).toBe('A gave up')
    held.hold = false
    held.letGo()
    await time.advance(200)
    expect({
      releases: backend.calls.release,
      token: b.value?.fencingToken,
      stored: store.leases.get('job')?.fencingToken,
    }).toEqual({ releases: 0, token: 1n, stored: 1n })
    await time.until(leaser.close())
  })

  // The other way round: A's lost attempt took the lease, B's attempt was refused naming this Leaser
  // (B had no unknown attempt, so took it for anyone's lease and waited). Released, B took it again at
  // a new token after its backoff; handed on, B has A's lease at once.
  test("the lease A's lost attempt took goes to B, which waits for it", async () => {
    const { time, leaser, backend, store } = setup({ prefetchCheckpoint: false })
    backend.setReplyLatency(50, 'acquire')
    backend.loseNextReplies('acquire')
    const controller = new AbortController()
    const a = track(leaser.acquire('job', { signal: controller.signal }))
    await time.advance(1)
    expect(store.leases.get('job')?.fencingToken).toBe(1n)
    const b = track(leaser.acquire('job', { wait: true }))
    await time.advance(60)
    controller.abort(new Error('A gave up'))
    await time.advance(60)
    expect((a.error as Error).message).toBe('A gave up')
    await time.advance(100)
    expect({ token: b.value?.fencingToken, releases: backend.calls.release }).toEqual({
      token: 1n,
      releases: 0,
    })
    await time.until(leaser.close())
  })
})
