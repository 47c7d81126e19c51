import { getEventListeners } from 'node:events'
import { describe, expect, test } from 'vitest'
import { linkedCancel } from '../src/abortable.js'
import { ManualTime } from './manual-time.js'
import { refusingTimers } from './setup.js'

describe('linkedCancel', () => {
  // Found by a review (session 51): the listeners on the linked signals stayed when the timeout could
  // not be armed: one more on the renewal schedule's own signal for every batch sent so.
  test('a timeout that timers refuse leaves no listener on the signals it linked', () => {
    const time = new ManualTime()
    const { signal } = new AbortController()
    expect(() =>
      linkedCancel(
        refusingTimers(time, () => true),
        [signal],
        100,
      ),
    ).toThrow('timers refused')
    expect(getEventListeners(signal, 'abort')).toHaveLength(0)
  })
})
