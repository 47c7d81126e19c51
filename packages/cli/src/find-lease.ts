import type { Backend, LeaseListing } from '@worklease/spec'
import { listOf } from './read-leases.js'

/** The lease of exactly `workId`: the first entry of a list under it as prefix, since it sorts first. */
export async function findLease(
  backend: Backend,
  workId: string,
): Promise<{ lease?: LeaseListing; now: Date }> {
  const page = await listOf(backend)({ prefix: workId, limit: 1 })
  const first = page.leases[0]
  return first?.workId === workId ? { lease: first, now: page.now } : { now: page.now }
}
