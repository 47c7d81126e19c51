import { Leaser } from '@worklease/core'
import { MemoryBackend } from '@worklease/memory'
import type { Backend } from '@worklease/spec'
import { describe, expect, test } from 'vitest'
import { workleaseDriverSide } from '../src/peers/worklease-side.js'

const METHODS = [
  'acquire',
  'acquireWithCheckpoint',
  'release',
  'renew',
  'checkpoint',
  'readCheckpoint',
] as const

/**
 * A memory backend with its calls counted by method name, and apart the calls given an AbortSignal
 * (`release with a signal`). `declared` sets the acquireWithCheckpoint capability, `method` whether
 * that method is there, each on its own.
 */
function counted({ declared = true, method = true } = {}): { backend: Backend; calls: Map<string, number> } {
  const inner = new MemoryBackend()
  const calls = new Map<string, number>()
  const backend: Record<string, unknown> = {
    capabilities: { ...inner.capabilities, acquireWithCheckpoint: declared },
  }
  for (const name of METHODS) {
    if (name === 'acquireWithCheckpoint' && !method) continue
    backend[name] = (...args: unknown[]) => {
      const key = args.some(hasSignal) ? `${name} with a signal` : name
      calls.set(key, (calls.get(key) ?? 0) + 1)
      return (inner[name] as (...a: unknown[]) => unknown).apply(inner, args)
    }
  }
  return { backend: backend as unknown as Backend, calls }
}

function hasSignal(arg: unknown): boolean {
  return (
    typeof arg === 'object' && arg !== null && (arg as { signal?: unknown }).signal instanceof AbortSignal
  )
}

// The driver-alone row is the Leaser's store work without the runner: with its default
// prefetchCheckpoint a Leaser acquires through acquireWithCheckpoint, and a driver row that called
// acquire instead counted that read as the runner's (on Redis at c16, ~10,000 instructions a cycle).
// Likewise the AbortSignal the Leaser hands each release: a driver that races its call with the
// spec's raceAbort subscribes to it (on Redis, ~3,400 instructions a cycle at c16 and ~6,800 at c1).
describe("the peers section's driver-alone side", () => {
  test('makes the store calls a Leaser makes: acquireWithCheckpoint where the driver has it', async () => {
    const { backend, calls } = counted()
    const side = workleaseDriverSide(backend, () => 0, 'operations')
    const record = await side.tryAcquire('job', 30_000)
    expect(record?.workId).toBe('job')
    await side.release(record!)
    expect(Object.fromEntries(calls)).toEqual({ acquireWithCheckpoint: 1, 'release with a signal': 1 })
    expect(side.semantics).toContain('acquireWithCheckpoint')
  })

  test.each([
    ['declared without the method', { declared: true, method: false }],
    ['the method without the capability', { declared: false, method: true }],
    ['neither', { declared: false, method: false }],
  ])('and acquire on a driver with %s', async (_, shape) => {
    const { backend, calls } = counted(shape)
    const side = workleaseDriverSide(backend, () => 0, 'operations')
    await side.release((await side.tryAcquire('job', 30_000))!)
    expect(Object.fromEntries(calls)).toEqual({ acquire: 1, 'release with a signal': 1 })
    expect(side.semantics).not.toContain('acquireWithCheckpoint')
  })

  test.each([
    ['both', {}],
    ['declared without the method', { declared: true, method: false }],
    ['the method without the capability', { declared: false, method: true }],
  ])('calls what a Leaser with its defaults calls, on a driver with %s', async (_, shape) => {
    const viaLeaser = counted(shape)
    const leaser = new Leaser({ backend: viaLeaser.backend, ttlMs: 30_000, holderId: 'runner' })
    await (await leaser.acquire('job')).release()
    await leaser.close()
    const viaDriver = counted(shape)
    const side = workleaseDriverSide(viaDriver.backend, () => 0, 'operations')
    await side.release((await side.tryAcquire('job', 30_000))!)
    expect(Object.fromEntries(viaDriver.calls)).toEqual(Object.fromEntries(viaLeaser.calls))
  })

  test("hands every release one signal that takes a listener per call in flight, as the Leaser's do", async () => {
    const { backend } = counted()
    const signals: AbortSignal[] = []
    const release = backend.release.bind(backend)
    backend.release = (record, options) => {
      if (options?.signal) signals.push(options.signal)
      return release(record, options)
    }
    const side = workleaseDriverSide(backend, () => 0, 'operations')
    await side.release((await side.tryAcquire('a', 30_000))!)
    await side.release((await side.tryAcquire('b', 30_000))!)
    expect(signals).toHaveLength(2)
    expect(signals[1]).toBe(signals[0])
    // 16 releases in flight on a client that subscribes per request: no MaxListenersExceededWarning.
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(warning.name)
    process.on('warning', onWarning)
    try {
      for (let call = 0; call < 16; call++) signals[0]!.addEventListener('abort', () => undefined)
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', onWarning)
    }
    expect(warnings).toEqual([])
  })

  test('answers null when the lease is held, as a peer does', async () => {
    const { backend } = counted()
    const side = workleaseDriverSide(backend, () => 0, 'operations')
    expect(await side.tryAcquire('job', 30_000)).not.toBeNull()
    expect(await side.tryAcquire('job', 30_000)).toBeNull()
  })
})
