import { type Backend, isFencedError, type LeaseRecord } from '@worklease/spec'
import { type BackendFactory, suiteCases } from '@worklease/testkit'
import { expect, test } from 'vitest'
import { createHarness } from './redis-harness.js'

/** A plausible bug: a renew that treats "someone else took over" as nothing to worry about. */
function swallowFenced(backend: Backend): Backend {
  return {
    capabilities: backend.capabilities,
    acquire: (...args) => backend.acquire(...args),
    checkpoint: (...args) => backend.checkpoint(...args),
    release: (...args) => backend.release(...args),
    readCheckpoint: (...args) => backend.readCheckpoint(...args),
    async renew(record: LeaseRecord, ttlMs: number) {
      await backend.renew(record, ttlMs).catch((error: unknown) => {
        if (!isFencedError(error)) throw error
      })
    },
  }
}

// Before trusting a green run, make sure the harness really puts the driver under the suite: the
// same harness, with the driver broken on purpose, must fail.
test('the conformance suite, given this harness, catches a renew that ignores FENCED', async () => {
  const broken: BackendFactory = async () => {
    const harness = await createHarness()
    return { ...harness, open: async (options) => swallowFenced(await harness.open(options)) }
  }
  const failures: string[] = []
  for (const c of suiteCases({ factory: broken, groups: ['renew'] })) {
    await c.run().catch(() => failures.push(c.name))
  }
  expect(failures).toContain('renew after a takeover is FENCED')
}, 60_000)
