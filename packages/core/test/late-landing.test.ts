import { MemoryBackend, MemoryStore } from '@worklease/memory'
import { type CallOptions, isLeaseHeldError, type LeaseRecord } from '@worklease/spec'
import { ForwardingBackend, InjectedFaultError } from '@worklease/testkit'
import { expect, test } from 'vitest'
import { Leaser } from '../src/index.js'
import { ManualTime } from './manual-time.js'
import { DEADLINE, TTL, track } from './setup.js'

/** While `holding`, renewals hang for good and checkpoints land only when the test lets them. */
class LateCalls extends ForwardingBackend {
  holding = false
  /** The next acquire fails before it reaches the store, as a timeout whose outcome is unknown. */
  failAcquire = false
  override acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions) {
    if (!this.failAcquire) return super.acquire(workId, holderId, ttlMs, options)
    this.failAcquire = false
    return Promise.reject(new InjectedFaultError('acquire', false))
  }
  readonly late: (() => Promise<unknown>)[] = []
  override checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number, options?: CallOptions) {
    if (!this.holding) return super.checkpoint(record, state, ttlMs, options)
    this.late.push(() => this.inner.checkpoint(record, state, ttlMs))
    return new Promise<never>(() => {})
  }
  override renew(record: LeaseRecord, ttlMs: number, options?: CallOptions) {
    if (!this.holding) return super.renew(record, ttlMs, options)
    return new Promise<never>(() => {})
  }
  override renewMany(records: readonly LeaseRecord[], ttlMs: number, options?: CallOptions) {
    if (!this.holding) return super.renewMany!(records, ttlMs, options)
    return new Promise<never>(() => {})
  }
}

// Found by `pnpm torture --backend mariadb --seconds 180 --seed 443671444 --pool-members 2`: a pool
// member re-adopted, at the same token, a unit lease it had lost, a late checkpoint having extended it.
test('a lease lost while a checkpoint was in flight is not adopted again when that checkpoint lands late', async () => {
  const time = new ManualTime()
  const memory = new MemoryBackend({ store: new MemoryStore(), clock: time.wall })
  const backend = new LateCalls(memory)
  const leaser = new Leaser({ backend, ttlMs: TTL, holderId: 'worker-a', timers: time, renewJitter: 0 })
  const lease = await leaser.acquire('job')
  backend.holding = true
  const checkpoint = track(lease.checkpoint(new Uint8Array([1])))
  await time.advance(DEADLINE)
  expect(lease.held).toBe(false)
  // The checkpoint reaches the store just before the Leaser's memory of the loss runs out: the
  // store's lease (token 1, this holder) now outlives that memory by almost a ttl.
  await time.advance(TTL - 1)
  await backend.late.shift()!()
  backend.holding = false
  await time.advance(2)
  // Its first attempt's outcome unknown, the acquire retries and meets LEASE_HELD naming this holder.
  backend.failAcquire = true
  const again = track(leaser.acquire('job'))
  await time.advance(200)
  // Adopting it would give a new run the token of the run that was told it lost the lease.
  expect(again.value?.fencingToken).not.toBe(lease.fencingToken)
  expect(isLeaseHeldError(again.error)).toBe(true)
  void checkpoint
})
