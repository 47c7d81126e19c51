import type { Backend } from '@worklease/spec'

/** Who holds each unit of a pool's group, as the store lists it now (unexpired, unreleased leases). */
export async function readGroupHolders(backend: Backend, group: string): Promise<Map<string, string>> {
  const prefix = `${group}/u/`
  const holders = new Map<string, string>()
  let cursor: string | undefined
  do {
    const page = await backend.list!({ prefix, limit: 1_000, ...(cursor === undefined ? {} : { cursor }) })
    for (const lease of page.leases)
      if (!lease.free) holders.set(lease.workId.slice(prefix.length), lease.holderId)
    cursor = page.cursor
  } while (cursor !== undefined)
  return holders
}
