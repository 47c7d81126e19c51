import { expect, test } from 'vitest'
import type { LockSide } from '../src/peers/lock-side.js'
import { measureRace } from '../src/peers/measure.js'
import { soloAcquireTrips } from '../src/solo-acquire-trips.js'

// Found by a review (session 49): each winner was taken to cost one round trip, so a peer whose
// acquire is a read and a write (the DynamoDB peers) showed 2.02 per loser where each sent 2.
test('round trips per loser count what the winner really sent', async () => {
  let trips = 0
  const held = new Set<string>()
  const side: LockSide<string> = {
    label: 'read then write',
    semantics: '',
    waiting: '',
    roundTripUnit: 'requests',
    async tryAcquire(key) {
      trips++ // the read
      await new Promise((resolve) => setImmediate(resolve))
      trips++ // the conditional write
      if (held.has(key)) return null
      held.add(key)
      return key
    },
    async release(key) {
      trips++
      held.delete(key)
    },
    waitAcquire: () => Promise.reject(new Error('unused')),
    crash: async () => ({ notMeasured: 'unused' }),
    roundTrips: () => trips,
    close: async () => undefined,
  }
  const race = await measureRace(side, { acquirers: 64, rounds: 3, prefix: 'p', ttlMs: 1 })
  expect(race.winners).toEqual([1, 1, 1])
  expect(race.roundTripsPerLoser).toBe(2)
})

test("a first acquire's handshake is no winner's share", async () => {
  let trips = 0
  let first = true
  const measured = await soloAcquireTrips(
    () => trips,
    async () => {
      trips += first ? 3 : 1 // the first call also prepares and connects
      first = false
      return async () => {
        trips++
      }
    },
  )
  expect(measured).toBe(1)
})
