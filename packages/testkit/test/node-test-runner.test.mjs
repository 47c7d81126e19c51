// The suite as data runs under node:test too, from the published build, with no vitest involved.
import { test } from 'node:test'
import { MemoryBackend, MemoryStore } from '@worklease/memory'
import { suiteCases } from '@worklease/testkit'

const factory = () => {
  const store = new MemoryStore()
  return {
    open: ({ clock }) => new MemoryBackend({ store, clock }),
    roundTrips: () => store.operations,
    close: async () => {},
  }
}

for (const c of suiteCases({ factory })) {
  test(`${c.group} > ${c.name}`, { timeout: c.timeoutMs }, async (t) => {
    const outcome = await c.run()
    if (outcome.status === 'skipped') t.skip(outcome.reason)
  })
}
