import { describe, expect, test } from 'vitest'
import { HandBackQueue } from '../src/hand-back-queue.js'
import type { UnitRunner } from '../src/unit-runner.js'

/** Runners that record when the queue asks them to stop. */
function runners(count: number) {
  const stopped: string[] = []
  const made = Array.from(
    { length: count },
    (_, i) =>
      ({
        id: `r${i + 1}`,
        leave() {},
        stop() {
          stopped.push(`r${i + 1}`)
        },
      }) as unknown as UnitRunner,
  )
  return { made, stopped }
}

describe('HandBackQueue', () => {
  test('stops as many runners at once as it has slots; each that settles frees its slot for the next', () => {
    const queue = new HandBackQueue(2)
    const { made, stopped } = runners(3)
    const [r1, r2, r3] = made as [UnitRunner, UnitRunner, UnitRunner]
    for (const runner of made) queue.add(runner)
    expect(stopped).toEqual(['r1', 'r2'])
    queue.settled(r2)
    expect(stopped).toEqual(['r1', 'r2', 'r3'])
    queue.settled(r1)
    queue.settled(r3)
  })

  test('a runner whose run ended while it waited leaves the queue: never stopped, and no slot lost', () => {
    const queue = new HandBackQueue(2)
    const { made, stopped } = runners(6)
    const [r1, r2, r3, r4, r5, r6] = made
    for (const runner of [r1, r2, r3, r4]) queue.add(runner!)
    // r3's lease was lost while it waited for a slot: its run is over before it was ever asked to stop.
    queue.settled(r3!)
    queue.settled(r1!)
    expect(stopped).toEqual(['r1', 'r2', 'r4'])
    queue.settled(r2!)
    queue.settled(r4!)
    // Both slots free again: two more are stopped at once.
    queue.add(r5!)
    queue.add(r6!)
    expect(stopped).toEqual(['r1', 'r2', 'r4', 'r5', 'r6'])
  })
})
