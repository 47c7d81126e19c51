import { MemoryBackend } from '@worklease/memory'
import type { Backend } from '@worklease/spec'
import { describe, expect, test } from 'vitest'
import { workleaseDriverSide } from '../src/peers/worklease-side.js'

/** `backend` with its calls counted by method name; `withCheckpoint: false` hides acquireWithCheckpoint. */
function counted(withCheckpoint: boolean): { backend: Backend; calls: Map<string, number> } {
  const inner = new MemoryBackend()
  const calls = new Map<string, number>()
  const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1)
  const backend: Backend = {
    capabilities: { ...inner.capabilities, acquireWithCheckpoint: withCheckpoint },
    acquire: (...args) => (count('acquire'), inner.acquire(...args)),
    ...(withCheckpoint
      ? {
          acquireWithCheckpoint: (...args) => (
            count('acquireWithCheckpoint'), inner.acquireWithCheckpoint(...args)
          ),
        }
      : {}),
    release: (...args) => (count('release'), inner.release(...args)),
  } as Backend
  return { backend, calls }
}

// The driver-alone row is the Leaser's store work without the runner: with its default
// prefetchCheckpoint a Leaser acquires through acquireWithCheckpoint, and a driver row that called
// acquire instead counted that read as the runner's (on Redis at c16, ~10,000 instructions a cycle).
describe("the peers section's driver-alone side", () => {
  test('makes the store calls a Leaser makes: acquireWithCheckpoint where the driver has it', async () => {
    const { backend, calls } = counted(true)
    const side = workleaseDriverSide(backend, () => 0, 'operations')
    const record = await side.tryAcquire('job', 30_000)
    expect(record?.workId).toBe('job')
    await side.release(record!)
    expect(Object.fromEntries(calls)).toEqual({ acquireWithCheckpoint: 1, release: 1 })
    expect(side.semantics).toContain('acquireWithCheckpoint')
  })

  test('and acquire on a driver without it', async () => {
    const { backend, calls } = counted(false)
    const side = workleaseDriverSide(backend, () => 0, 'operations')
    await side.release((await side.tryAcquire('job', 30_000))!)
    expect(Object.fromEntries(calls)).toEqual({ acquire: 1, release: 1 })
    expect(side.semantics).not.toContain('acquireWithCheckpoint')
  })

  test('answers null when the lease is held, as a peer does', async () => {
    const { backend } = counted(true)
    const side = workleaseDriverSide(backend, () => 0, 'operations')
    expect(await side.tryAcquire('job', 30_000)).not.toBeNull()
    expect(await side.tryAcquire('job', 30_000)).toBeNull()
  })
})
