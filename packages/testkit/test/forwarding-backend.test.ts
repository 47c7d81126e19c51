import { MemoryBackend } from '@worklease/memory'
import type { CallOptions } from '@worklease/spec'
import { describe, expect, test } from 'vitest'
import { ForwardingBackend } from '../src/index.js'

class SlowAcquire extends ForwardingBackend {
  acquires = 0
  override acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions) {
    this.acquires++
    return super.acquire(workId, holderId, ttlMs, options)
  }
}

describe('ForwardingBackend', () => {
  test('forwards the capabilities as they are when no acquire is overridden', () => {
    const inner = new MemoryBackend()
    expect(new ForwardingBackend(inner).capabilities).toBe(inner.capabilities)
  })

  test('a subclass that overrides acquire alone declares no acquireWithCheckpoint', async () => {
    const wrapper = new SlowAcquire(new MemoryBackend())
    expect(wrapper.capabilities.acquireWithCheckpoint).toBeUndefined()
    expect(wrapper.capabilities).toBe(wrapper.capabilities)
    expect(wrapper.capabilities.renewMany).toEqual({ maxRecords: 1_000 })
    await wrapper.acquire('w', 'h', 1_000)
    expect(wrapper.acquires).toBe(1)
  })

  test('a subclass that overrides both keeps it', () => {
    class Both extends SlowAcquire {
      override acquireWithCheckpoint(workId: string, holderId: string, ttlMs: number, options?: CallOptions) {
        return super.acquireWithCheckpoint(workId, holderId, ttlMs, options)
      }
    }
    expect(new Both(new MemoryBackend()).capabilities.acquireWithCheckpoint).toBe(true)
  })
})
