import assert from 'node:assert/strict'
import { MemoryBackend, MemoryStore } from '@worklease/memory'
import { type Backend, isLeaseHeldError, type ListOptions } from '@worklease/spec'
import { describe, test } from 'vitest'
import { poolSuite } from '../src/testing/index.js'

poolSuite({
  name: 'memory',
  describe,
  test,
  factory: () => {
    const store = new MemoryStore()
    return { open: ({ clock }) => new MemoryBackend({ store, clock }), close: async () => {} }
  },
  ttlMs: 500,
})

/**
 * A broken store that grants a unit someone holds: its listing shows no unit held, and its acquire
 * ends the holder's lease in the store (which that holder learns only at its next renewal).
 */
class GrantsHeldUnits extends MemoryBackend {
  override async acquire(...args: Parameters<Backend['acquire']>) {
    try {
      return await super.acquire(...args)
    } catch (error) {
      if (!isLeaseHeldError(error) || !args[0].includes('/u/')) throw error
      await this.revoke(args[0])
      return super.acquire(...args)
    }
  }
  override async list(options?: ListOptions) {
    const page = await super.list(options)
    return { ...page, leases: page.leases.filter((lease) => !lease.workId.includes('/u/')) }
  }
}

describe('poolSuite fails', () => {
  test('a store that lets two members run one unit, naming both runs and their tokens', async () => {
    const cases = new Map<string, () => Promise<void>>()
    poolSuite({
      name: 'broken',
      describe: (_name, body) => body(),
      test: (name, body) => void cases.set(name, body),
      factory: () => {
        const store = new MemoryStore()
        return { open: ({ clock }) => new GrantsHeldUnits({ store, clock }), close: async () => {} }
      },
      ttlMs: 500,
    })
    const twoMembers = [...cases].find(([name]) => name.startsWith('two members share ten units'))![1]
    await assert.rejects(
      twoMembers(),
      /two live runs of one unit:\nunit-\d started by member-b \(token 2, at \d+ ms\) while member-a ran it \(token 1, since \d+ ms\)/,
    )
  }, 20_000)
})
