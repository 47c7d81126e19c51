/**
 * What a pool member sees of its group at one rebalance: who is alive, which units are wanted, and
 * who holds each. Plain data, so a planner is a pure function and easy to test or replace.
 */
export interface PoolView {
  /** This member's holderId. */
  readonly me: string
  /** Live members' holderIds (this one included), in code point order. */
  readonly members: readonly string[]
  /**
   * The units to share (wanted and not done), in code point order. A unit this member's listings
   * have shown held by someone outside the group for more than a ttl (a member out of the group after
   * stalls runs its units on) is left out: nobody can give it, so the split is of the rest.
   */
  readonly units: readonly string[]
  /** The live holder of each held unit; a unit missing here is free. */
  readonly holders: ReadonlyMap<string, string>
}

/** What a planner decides for this member: how many units to take and which of its own to give back. */
export interface PoolPlan {
  /** How many free units to try to take now: a whole number from 0, or `Infinity`. */
  readonly take: number
  /** How many of this member's units to release now (handlers are stopped first); as `take`. */
  readonly release: number
}

/**
 * @internal The even split of a view's units over its members, this one counted even before the
 * listing shows it: every member ends with `lower` or `upper` units. With it, how far the view is
 * from that: the units each member holds, the free ones, how many the members below `lower` lack
 * (`shortfall`) and how many those above `upper` hold beyond it (`surplus`).
 */
export function evenShare(view: PoolView): {
  lower: number
  upper: number
  counts: ReadonlyMap<string, number>
  free: number
  shortfall: number
  surplus: number
} {
  const members = view.members.includes(view.me) ? view.members : [...view.members, view.me]
  const lower = Math.floor(view.units.length / members.length)
  const upper = Math.ceil(view.units.length / members.length)
  const counts = new Map<string, number>(members.map((member) => [member, 0]))
  let free = 0
  for (const unit of view.units) {
    const holder = view.holders.get(unit)
    if (holder === undefined) free++
    // A unit held by someone who is not a live member still blocks: it is not free to take.
    else if (counts.has(holder)) counts.set(holder, counts.get(holder)! + 1)
  }
  let shortfall = 0
  let surplus = 0
  for (const count of counts.values()) {
    shortfall += Math.max(0, lower - count)
    surplus += Math.max(0, count - upper)
  }
  return { lower, upper, counts, free, shortfall, surplus }
}

/**
 * The default planner: every member converges on `floor(N/W)` or `ceil(N/W)` units, and units move
 * only by consent (a member releases its own; nobody takes a live lease).
 *
 * - A member above `ceil(N/W)` releases its surplus.
 * - Members below `floor(N/W)` take free units first. While one of them is short and the free units
 *   and the surplus above do not fill the gap, the members above `floor(N/W)` give one each (one
 *   above the ceiling with its surplus), in a fixed order (holderId), so that exactly as many units
 *   move as the gap needs.
 * - A member below `ceil(N/W)` takes free units only when no member is short: otherwise it would take
 *   back the unit a donor just gave up for the short one, and the group would thrash.
 *
 * The band between floor and ceil is the hysteresis: nothing moves while every member is inside it.
 * At most `maxMoves` units move per member and rebalance.
 *
 * ```ts
 * const plan = planFairShare({ me: 'b', members: ['a', 'b'], units: ['u1', 'u2'], holders: new Map([['u1', 'a'], ['u2', 'a']]) }, 10)
 * // { take: 1, release: 0 } once a has released one: a holds 2 > ceil(2/2) = 1
 * ```
 */
export function planFairShare(view: PoolView, maxMoves: number): PoolPlan {
  const { lower, upper, counts, free, shortfall, surplus } = evenShare(view)
  const mine = counts.get(view.me)!
  // What members above their ceiling give up anyway fills the gap first: a donor at its ceiling
  // giving as well would move one unit too many, and take one back later.
  const gap = shortfall - free - surplus
  // The donors are every member above the floor, those above the ceiling too (each ends at its
  // ceiling once its surplus is given), not only those at it: a member does not see another's hand-
  // backs until they land. Its own are out of its count, so while they are in flight it sees itself at
  // its ceiling and every other donor above it; counting only members at the ceiling, each of them
  // then took itself for the only donor, and all gave one (3 where 1 was needed), to take the extra
  // units back later. With lower === upper nobody can give one and stay inside the band.
  const donates =
    gap > 0 &&
    upper > lower &&
    mine > lower &&
    [...counts]
      .filter(([, count]) => count > lower)
      .map(([member]) => member)
      .sort()
      .slice(0, gap)
      .includes(view.me)
  if (mine > upper) return { take: 0, release: Math.min(mine - upper + (donates ? 1 : 0), maxMoves) }
  if (donates) return { take: 0, release: 1 }
  const room = shortfall > 0 ? lower - mine : upper - mine
  return { take: Math.max(0, Math.min(room, free, maxMoves)), release: 0 }
}
