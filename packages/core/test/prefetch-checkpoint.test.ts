import { describe, expect, test } from 'vitest'
import { Leaser } from '../src/index.js'
import { bytes, setup } from './setup.js'

const text = (state: Uint8Array | null) => (state === null ? null : new TextDecoder().decode(state))

describe('the checkpoint comes back with the acquire (capabilities.acquireWithCheckpoint)', () => {
  test('a takeover that resumes is one round trip: the first read is the acquire’s own', async () => {
    const { leaser, backend, other } = setup()
    const previous = await other.acquire('job', 'worker-b', 1_000)
    await other.checkpoint(previous, bytes('page 7'), 1_000)
    await other.release(previous)
    const lease = await leaser.acquire('job')
    const read = await lease.readCheckpoint()
    expect({ state: text(read.state), cleanHandoff: read.cleanHandoff }).toEqual({
      state: 'page 7',
      cleanHandoff: true,
    })
    expect({ acquire: backend.calls.acquire, readCheckpoint: backend.calls.readCheckpoint }).toEqual({
      acquire: 1,
      readCheckpoint: 0,
    })
    // Handed out once: the next read asks the store.
    expect(text((await lease.readCheckpoint()).state)).toBe('page 7')
    expect(backend.calls.readCheckpoint).toBe(1)
    await lease.release()
  })

  test('after the lease checkpoints, a read goes to the store and sees the new state', async () => {
    const { leaser, backend } = setup()
    const lease = await leaser.acquire('job')
    await lease.checkpoint(bytes('mine'))
    expect(text((await lease.readCheckpoint()).state)).toBe('mine')
    expect(backend.calls.readCheckpoint).toBe(1)
    await lease.release()
  })

  test('a crashed predecessor is an unclean handoff in the acquire’s read too', async () => {
    const { leaser, other, time } = setup()
    const crashed = await other.acquire('job', 'worker-b', 1_000)
    await other.checkpoint(crashed, bytes('half'), 1_000)
    await time.advance(1_001)
    const lease = await leaser.acquire('job')
    const read = await lease.readCheckpoint()
    expect({ state: text(read.state), cleanHandoff: read.cleanHandoff }).toEqual({
      state: 'half',
      cleanHandoff: false,
    })
    await lease.release()
  })

  test('a lease past its local deadline does not answer from the acquire’s read', async () => {
    const { leaser, backend, time } = setup()
    const lease = await leaser.acquire('job')
    backend.setDown(true) // renewals fail from here on
    await time.advance(1_000)
    await expect(lease.readCheckpoint()).rejects.toMatchObject({ code: 'LEASE_LOST' })
  })

  test('prefetchCheckpoint: false reads from the store; anything but a boolean is refused', async () => {
    const { leaser, backend } = setup({ prefetchCheckpoint: false })
    const lease = await leaser.acquire('job')
    await lease.readCheckpoint()
    expect(backend.calls.readCheckpoint).toBe(1)
    await lease.release()
    for (const bad of ['yes', 1, null]) {
      expect(
        () => new Leaser({ backend, ttlMs: 1_000, prefetchCheckpoint: bad as never }),
        String(bad),
      ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    }
  })
})
