import { isLeaseHeldError } from '@worklease/spec'
import { expect, test } from 'vitest'
import { MemoryRpcBackend, MemoryServer } from '../src/memory-rpc.js'

// The torture's memory store is a MemoryBackend behind a wire. It reports the lease in the way, as
// MemoryBackend does, so a Leaser on it adopts its own lease from a LEASE_HELD as on every other store.
test('a LEASE_HELD over the wire names the lease in the way', async () => {
  const server = new MemoryServer()
  const port = await server.listen()
  let now = 1_000
  const backend = new MemoryRpcBackend(port, { now: () => now })
  try {
    expect(backend.capabilities.reportsHolder).toBe(true)
    const record = await backend.acquire('w', 'a', 500)
    now += 100
    const refused = await backend.acquire('w', 'b', 500).catch((error: unknown) => error)
    expect(isLeaseHeldError(refused) && refused.holder).toEqual({
      holderId: 'a',
      fencingToken: record.fencingToken,
      expiresAt: new Date(1_500),
      expiresInMs: 400,
    })
  } finally {
    backend.close()
    await server.close()
  }
})
