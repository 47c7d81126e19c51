import { randomBytes } from 'node:crypto'
import { Leaser } from '@worklease/core'
import { isWorkleaseError, type LeaseRecord } from '@worklease/spec'
import type { Session } from './target.js'

/** Round trips one call sent, and how it ended ('ok' or a worklease error code). */
export interface CountedCall {
  readonly roundTrips: number
  readonly outcome: string
}

export interface RoundTripResult {
  readonly happy: Record<string, CountedCall>
  readonly failure: Record<string, CountedCall>
  /** The baseline's happy path, counted the same way. */
  readonly baseline: Record<string, CountedCall>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Counts the statements / commands / requests of each operation, as the driver tests count them, on
 * the happy path and on each failure path (where a backend may read once more to name the error).
 *
 * ```ts
 * const trips = await countRoundTrips(session)
 * trips.failure['renew (expired)'] // { roundTrips: 2, outcome: 'LEASE_EXPIRED' }
 * ```
 */
export async function countRoundTrips(session: Session): Promise<RoundTripResult> {
  const { backend, baseline } = session
  const run = randomBytes(3).toString('hex')
  const count = async <T>(call: () => Promise<T>): Promise<CountedCall & { value?: T }> => {
    const before = session.roundTrips()
    try {
      const value = await call()
      return { roundTrips: session.roundTrips() - before, outcome: 'ok', value }
    } catch (error) {
      if (!isWorkleaseError(error)) throw error
      return { roundTrips: session.roundTrips() - before, outcome: error.code }
    }
  }
  const strip = ({ roundTrips, outcome }: CountedCall): CountedCall => ({ roundTrips, outcome })
  const state = randomBytes(1024)
  const ttl = 30_000
  const happy: Record<string, CountedCall> = {}
  const failure: Record<string, CountedCall> = {}

  const first = await count(() => backend.acquire(`rt-${run}-a`, 'holder-1', ttl))
  happy['acquire (new workId)'] = strip(first)
  const record = first.value as LeaseRecord
  failure['acquire (held)'] = strip(await count(() => backend.acquire(`rt-${run}-a`, 'holder-2', ttl)))
  happy.checkpoint = strip(await count(() => backend.checkpoint(record, state, ttl)))
  happy.renew = strip(await count(() => backend.renew(record, ttl)))
  happy.readCheckpoint = strip(await count(() => backend.readCheckpoint(record)))
  happy.release = strip(await count(() => backend.release(record)))
  const second = await count(() => backend.acquire(`rt-${run}-a`, 'holder-2', ttl))
  happy['acquire (released workId)'] = strip(second)
  if (backend.capabilities.acquireWithCheckpoint && backend.acquireWithCheckpoint) {
    await backend.release(second.value as LeaseRecord)
    happy['acquireWithCheckpoint (released workId, 1 KiB state)'] = strip(
      await count(() => backend.acquireWithCheckpoint!(`rt-${run}-a`, 'holder-3', ttl)),
    )
  }
  // What a resuming takeover costs through the runner: its acquire and the lease's first read.
  const leaser = new Leaser({ backend, ttlMs: ttl, holderId: `rt-${run}-leaser` })
  try {
    const resumed = await backend.acquire(`rt-${run}-d`, 'holder-1', ttl)
    await backend.checkpoint(resumed, state, ttl)
    await backend.release(resumed)
    happy['Leaser: acquire, then readCheckpoint'] = strip(
      await count(async () => {
        const lease = await leaser.acquire(`rt-${run}-d`)
        await lease.readCheckpoint()
        return lease
      }),
    )
  } finally {
    await leaser.close()
  }
  // The first record is now stale: every call with it must be fenced.
  failure['checkpoint (fenced)'] = strip(await count(() => backend.checkpoint(record, state, ttl)))
  failure['renew (fenced)'] = strip(await count(() => backend.renew(record, ttl)))
  failure['release (fenced)'] = strip(await count(() => backend.release(record)))
  failure['readCheckpoint (fenced)'] = strip(await count(() => backend.readCheckpoint(record)))
  const short = (await backend.acquire(`rt-${run}-b`, 'holder-1', 50)) as LeaseRecord
  await sleep(120)
  failure['renew (expired)'] = strip(await count(() => backend.renew(short, ttl)))

  const base: Record<string, CountedCall> = {}
  const lease = await count(() => baseline.acquire(`rt-${run}-c`, 'holder-1', ttl))
  base.acquire = strip(lease)
  const held = lease.value as NonNullable<typeof lease.value>
  base.checkpoint = strip(await count(() => baseline.checkpoint(held, state, ttl)))
  base.renew = strip(await count(() => baseline.renew(held, ttl)))
  base.release = strip(await count(() => baseline.release(held)))
  return { happy, failure, baseline: base }
}
