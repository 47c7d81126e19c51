import { compareWorkIds, type LeasePage, type ListOptions } from '@worklease/spec'
import type { PoolView } from './fair-share.js'

/** The workIds a pool keeps in its group, one prefix for all, so one listing reads the whole group. */
export interface PoolKeys {
  readonly prefix: string
  member(holderId: string): string
  unit(unitId: string): string
  doneMark(unitId: string): string
}

export function poolKeys(group: string): PoolKeys {
  const prefix = `${group}/`
  return {
    prefix,
    member: (holderId) => `${prefix}m/${holderId}`,
    unit: (unitId) => `${prefix}u/${unitId}`,
    doneMark: (unitId) => `${prefix}d/${unitId}`,
  }
}

/** A group as one listing shows it, before the wanted set is applied. */
export interface GroupListing {
  readonly members: readonly string[]
  readonly holders: ReadonlyMap<string, string>
  /**
   * Units whose done mark is set or held (being set, or being cleared): not to be run now, and a
   * finished unit not again while it stays wanted.
   */
  readonly done: ReadonlySet<string>
  /** Units whose done mark is set (released): the marks a member clears once a unit leaves the set. */
  readonly marked: ReadonlySet<string>
}

/**
 * Reads the whole group, page by page: live members (unexpired membership leases), the live holder
 * of every unit, and done marks. A done mark is a lease that was acquired and released; clearing it
 * takes it again and lets it expire, so `released` is the mark, and a mark that is held (being set or
 * being cleared) keeps the unit from running until it is one or the other. `list` reads one page (the
 * pool bounds each call in time).
 */
export async function readGroup(
  list: (options: ListOptions) => Promise<LeasePage>,
  keys: PoolKeys,
): Promise<GroupListing> {
  const members: string[] = []
  const holders = new Map<string, string>()
  const done = new Set<string>()
  const marked = new Set<string>()
  let cursor: string | undefined
  do {
    const page = await list({
      prefix: keys.prefix,
      limit: 1_000,
      ...(cursor === undefined ? {} : { cursor }),
    })
    for (const lease of page.leases) {
      const rest = lease.workId.slice(keys.prefix.length)
      const kind = rest.slice(0, 2)
      const id = rest.slice(2)
      if (kind === 'm/' && !lease.free) members.push(lease.holderId)
      else if (kind === 'u/' && !lease.free) holders.set(id, lease.holderId)
      // Set (released), or held: being set by the member that finished the unit, or being cleared
      // (taken, left to expire) because the unit left the set. Either way not to run now.
      else if (kind === 'd/' && (lease.released || !lease.free)) {
        done.add(id)
        if (lease.released) marked.add(id)
      }
    }
    cursor = page.cursor
  } while (cursor !== undefined)
  return { members: members.sort(compareWorkIds), holders, done, marked }
}

/** The planner's view: the wanted units that are not done, and who holds them. */
export function viewOf(me: string, group: GroupListing, wanted: readonly string[]): PoolView {
  return {
    me,
    members: group.members,
    // In code point order, as PoolView promises: members whose units come in different orders (a
    // query without ORDER BY) hand a planner the same view.
    units: wanted.filter((unit) => !group.done.has(unit)).sort(compareWorkIds),
    holders: group.holders,
  }
}

/** A view of the planner's own: new arrays and map, so what it changes is not the pool's view. */
export function copyView(view: PoolView): PoolView {
  return { me: view.me, members: [...view.members], units: [...view.units], holders: new Map(view.holders) }
}
