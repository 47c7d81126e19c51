import { describe, expect, test } from 'vitest'
import type { Lease } from '../src/lease.js'
import { DEFAULT_RETRY } from '../src/retry-policy.js'
import { type UnitGate, UnitRunner } from '../src/unit-runner.js'
import { ManualTime } from './manual-time.js'

/** Just what a runner reads of its lease: whether it is held, and its signal. */
class FakeLease {
  held = true
  readonly #lost = new AbortController()
  get signal(): AbortSignal {
    return this.#lost.signal
  }
  lose(): void {
    this.held = false
    this.#lost.abort(new Error('lost'))
  }
}

/** A runner over a fake lease, its backoff on a clock that never moves unless told to. */
function runner(handler: () => Promise<void> | void, gate?: UnitGate) {
  const lease = new FakeLease()
  const failures: unknown[] = []
  const time = new ManualTime()
  const made = new UnitRunner(
    'u1',
    lease as unknown as Lease<any>,
    handler,
    {
      policy: DEFAULT_RETRY,
      timers: time,
      // Every backoff is as long as it can be: only a stop or a loss ends it in these cases.
      random: () => 0.999,
      onError: (error) => failures.push(error),
    },
    gate,
  )
  return { made, lease, failures, time }
}

describe('UnitRunner', () => {
  test.each([
    // Its last step may be half done: failed, so the pool leaves the unit to expire.
    ['a stop', 'failed', ({ made }: ReturnType<typeof runner>) => made.stop()],
    ['a loss', 'lost', ({ lease }: ReturnType<typeof runner>) => lease.lose()],
  ] as const)(
    '%s during the backoff after a failed run ends it %s: the handler does not run again',
    async (_, end, interrupt) => {
      let runs = 0
      const unit = runner(() => {
        runs++
        throw new Error('boom')
      })
      await unit.time.flush()
      expect(unit.failures.length).toBe(1)
      interrupt(unit)
      expect(await unit.made.ended).toBe(end)
      expect(runs).toBe(1)
    },
  )

  test('asks the gate first: a clear "not done" with the lease held starts the handler, told before it runs', async () => {
    const order: string[] = []
    const { made } = runner(() => void order.push('handler'), {
      isDone: async () => false,
      started: () => void order.push('started'),
    })
    expect(await made.ended).toBe('done')
    expect(order).toEqual(['started', 'handler'])
  })

  test.each([
    ['the gate says done', () => Promise.resolve(true), undefined],
    ['the gate answers no boolean', () => Promise.resolve(undefined as unknown as boolean), undefined],
    ['the gate fails', () => Promise.reject(new Error('store down')), undefined],
    ['the lease was lost while the gate was asked', () => Promise.resolve(false), 'lose'],
    ['the pool stopped the unit while the gate was asked', () => Promise.resolve(false), 'stop'],
  ] as const)(
    'ends it unrun when %s: never started, the handler never runs',
    async (_, isDone, meanwhile) => {
      let runs = 0
      let started = 0
      let unit: ReturnType<typeof runner> | undefined
      unit = runner(
        () => {
          runs++
        },
        {
          isDone: async () => {
            await Promise.resolve()
            if (meanwhile === 'lose') unit?.lease.lose()
            if (meanwhile === 'stop') unit?.made.stop()
            return isDone()
          },
          started: () => void started++,
        },
      )
      expect(await unit.made.ended).toBe('unrun')
      expect({ runs, started }).toEqual({ runs: 0, started: 0 })
    },
  )
})
