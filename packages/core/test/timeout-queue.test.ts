import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, test } from 'vitest'
import { type Timeout, TimeoutQueue } from '../src/timeout-queue.js'
import { ManualTime } from './manual-time.js'
import { collectUncaughtExceptions, refusingTimers } from './setup.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

describe('TimeoutQueue', () => {
  const uncaught = collectUncaughtExceptions()

  test('each timeout fires exactly timeoutMs after it was added, in order, on one timer', async () => {
    const time = new ManualTime()
    const timeouts = new TimeoutQueue(time, 100)
    const fired: [string, number][] = []
    timeouts.add(() => fired.push(['a', time.now()]))
    await time.advance(30)
    timeouts.add(() => fired.push(['b', time.now()]))
    timeouts.add(() => fired.push(['c', time.now()]))
    expect(time.pending).toBe(1)
    await time.advance(99)
    expect(fired).toEqual([['a', 100]])
    await time.advance(1)
    expect(fired).toEqual([
      ['a', 100],
      ['b', 130],
      ['c', 130],
    ])
    expect(time.pending).toBe(0)
  })

  test('a cancelled timeout never fires; the next one still fires on time', async () => {
    const time = new ManualTime()
    const timeouts = new TimeoutQueue(time, 100)
    const fired: number[] = []
    const first = timeouts.add(() => fired.push(1))
    await time.advance(10)
    timeouts.add(() => fired.push(2))
    timeouts.cancel(first)
    timeouts.cancel(first)
    await time.advance(200)
    expect(fired).toEqual([2])
    expect(time.now()).toBe(210)
  })

  test('left armed when it empties, the timer fires once, finds nothing and is not set again', async () => {
    const time = new ManualTime()
    const timeouts = new TimeoutQueue(time, 100)
    const fired: number[] = []
    for (let call = 0; call < 50; call++) timeouts.cancel(timeouts.add(() => fired.push(call)))
    expect(time.pending).toBe(1)
    await time.advance(100)
    expect(time.pending).toBe(0)
    expect(fired).toEqual([])
    // Added after that: armed again, for its own timeout.
    timeouts.add(() => fired.push(99))
    await time.advance(100)
    expect(fired).toEqual([99])
  })

  test('clearIfIdle drops the timer of an empty queue, never one a timeout waits for', async () => {
    const time = new ManualTime()
    const timeouts = new TimeoutQueue(time, 100)
    const fired: number[] = []
    const timeout = timeouts.add(() => fired.push(1))
    timeouts.clearIfIdle()
    expect(time.pending).toBe(1)
    timeouts.cancel(timeout)
    timeouts.clearIfIdle()
    expect(time.pending).toBe(0)
    timeouts.add(() => fired.push(2))
    await time.advance(100)
    expect(fired).toEqual([2])
  })

  test('timeouts cancelled behind one that still waits are let go long before it fires', async () => {
    const time = new ManualTime()
    const timeouts = new TimeoutQueue(time, 100)
    const fired: number[] = []
    timeouts.add(() => fired.push(0))
    for (let call = 1; call <= 10_000; call++) timeouts.cancel(timeouts.add(() => fired.push(call)))
    // Compacted each time the cancelled outnumbered twice the waiting by 1,024 (at 1,026 held, down to
    // the 1 waiting): 9 times in 10,000, and 775 cancelled since. Never all 10,000.
    expect(timeouts.held).toBe(1 + 775)
    await time.advance(100)
    expect(fired).toEqual([0])
    expect(timeouts.held).toBe(0)
  })

  test('a timeout cancelled at the head leaves the queue at once', () => {
    const time = new ManualTime()
    const timeouts = new TimeoutQueue(time, 100)
    const first = timeouts.add(() => undefined)
    timeouts.add(() => undefined)
    timeouts.add(() => undefined)
    timeouts.cancel(first)
    expect(timeouts.held).toBe(2)
  })

  test('timeouts cancelled at the head are let go once 1,024 of them are half the queue', async () => {
    const time = new ManualTime()
    const timeouts = new TimeoutQueue(time, 100)
    const refs: WeakRef<Timeout>[] = []
    for (let call = 0; call < 2_000; call++) {
      const timeout = timeouts.add(() => undefined)
      refs.push(new WeakRef(timeout))
    }
    for (let call = 0; call < 1_500; call++) timeouts.cancel(refs[call]!.deref()!)
    expect(timeouts.held).toBe(500)
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    // Cut at the 1,024th (then half of the 2,000); the 476 cancelled after it wait for the next cut.
    expect(refs.slice(0, 1_500).filter((ref) => ref.deref() !== undefined)).toHaveLength(476)
  })

  test('a callback may add a timeout of its own, which fires timeoutMs after that', async () => {
    const time = new ManualTime()
    const timeouts = new TimeoutQueue(time, 100)
    const fired: number[] = []
    timeouts.add(() => {
      fired.push(time.now())
      timeouts.add(() => fired.push(time.now()))
    })
    await time.advance(500)
    expect(fired).toEqual([100, 200])
  })

  // Found by a review (session 51): queued before its timer was armed, a timeout that timers refused
  // stayed in the queue, live, with no handle its caller could cancel it by.
  test('a timeout whose timer cannot be armed is not queued', () => {
    const time = new ManualTime()
    let refusals = 1
    const timers = refusingTimers(time, () => refusals-- > 0)
    const queue = new TimeoutQueue(timers, 1_000)
    expect(() => queue.add(() => undefined)).toThrow('timers refused')
    expect(queue.held).toBe(0)
  })

  // Found by a review (session 51): the re-arm for the entries still waiting came before the due ones
  // were called, and a refused one lost them, already taken out of the queue.
  test('a re-arm that timers refuse: the due timeouts fire all the same, the refusal reported', async () => {
    const time = new ManualTime()
    let refuse = false
    const queue = new TimeoutQueue(
      refusingTimers(time, () => refuse),
      100,
    )
    const fired: string[] = []
    queue.add(() => fired.push('a'), 0)
    queue.add(() => fired.push('b'), 50)
    refuse = true
    await time.advance(100)
    refuse = false
    expect(fired).toEqual(['a'])
    // The next add (due at 200) arms for the earliest entry still waiting (b, due at 150), not its own.
    queue.add(() => fired.push('c'))
    await time.advance(50)
    expect(fired).toEqual(['a', 'b'])
    await time.advance(50)
    expect(fired).toEqual(['a', 'b', 'c'])
    await new Promise((resolve) => process.nextTick(resolve))
    expect(uncaught.map((error) => (error as Error).message)).toEqual(['timers refused'])
  })
})
