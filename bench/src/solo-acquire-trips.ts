/**
 * The round trips one uncontended acquire sends, warm: a race's winners' share of its count, the rest
 * being the losers'. A first acquire may add a statement's prepare or a connection's handshake, so one
 * goes first, uncounted. `acquireFree(attempt)` takes a free lease of its own and answers how to let
 * it go (uncounted too).
 *
 * ```ts
 * const winnerTrips = await soloAcquireTrips(session.roundTrips, async (attempt) => {
 *   const lease = await backend.acquire(`solo-${attempt}`, 'solo', 30_000)
 *   return () => backend.release(lease)
 * })
 * ```
 */
export async function soloAcquireTrips(
  roundTrips: () => number,
  acquireFree: (attempt: number) => Promise<() => Promise<unknown>>,
): Promise<number> {
  await (await acquireFree(0))()
  const before = roundTrips()
  const release = await acquireFree(1)
  const trips = roundTrips() - before
  await release()
  return trips
}
