import { describe, expect, test } from 'vitest'
import { CallSignals } from '../src/call-signals.js'
import { ManualTime } from './manual-time.js'
import { refusingTimers } from './setup.js'

// A backend call that settles only when told: by `finish`, or by its signal's abort.
function hangingCall(signals: CallSignals) {
  let finish!: () => void
  let signal!: AbortSignal
  const settled = signals.call(
    (given) =>
      new Promise<void>((resolve, reject) => {
        signal = given
        finish = resolve
        given.addEventListener('abort', () => reject(given.reason), { once: true })
      }),
  )
  settled.catch(() => undefined)
  return { signal, finish, settled }
}

/** Advances to just before `at`, where `signal` must still be live, then to `at`, where it aborted. */
async function expectAbortAt(time: ManualTime, signal: AbortSignal, at: number) {
  await time.advance(at - 1 - time.now())
  expect(signal.aborted).toBe(false)
  await time.advance(1)
  expect(signal.aborted).toBe(true)
}

describe('the signals backend calls carry', () => {
  test('calls within a slice share one, which aborts after every one of them timed out, a slice at most later', async () => {
    const time = new ManualTime()
    const signals = new CallSignals(time, 1_600) // a slice is 100 ms
    const first = hangingCall(signals)
    await time.advance(99)
    const second = hangingCall(signals)
    expect(second.signal).toBe(first.signal)
    // The second call's timeout ends at 99 + 1,600; the slice's signal aborts at 100 + 1,600.
    await expectAbortAt(time, first.signal, 1_700)
    expect((first.signal.reason as DOMException).name).toBe('TimeoutError')
    await expect(second.settled).rejects.toBe(first.signal.reason)
  })

  test('a call once the slice has passed gets a new signal, never one that aborted', async () => {
    const time = new ManualTime()
    const signals = new CallSignals(time, 1_600)
    const first = hangingCall(signals)
    await time.advance(100)
    const second = hangingCall(signals)
    expect(second.signal).not.toBe(first.signal)
    await time.advance(1_600)
    expect(first.signal.aborted).toBe(true)
    expect(second.signal.aborted).toBe(false)
  })

  test('a slice sets one timer, which fires once and never aborts the signal once every call settled', async () => {
    const time = new ManualTime()
    const signals = new CallSignals(time, 1_600)
    const calls = [hangingCall(signals), hangingCall(signals)]
    expect(time.pending).toBe(1)
    calls[0]!.finish()
    calls[1]!.finish()
    await time.advance(0)
    // Left armed: clearing it when the slice went quiet and setting it again cost a timer a call.
    hangingCall(signals).finish()
    expect(time.pending).toBe(1)
    await time.advance(10_000)
    expect(time.pending).toBe(0)
    expect(calls[0]!.signal.aborted).toBe(false)
  })

  test('a call after its slice went quiet arms the slice again, for its own timeout', async () => {
    const time = new ManualTime()
    const signals = new CallSignals(time, 1_600)
    const first = hangingCall(signals)
    first.finish()
    await time.advance(50)
    const second = hangingCall(signals)
    expect(second.signal).toBe(first.signal)
    await expectAbortAt(time, second.signal, 1_700)
  })

  test('abortAll aborts the calls in flight, and later calls get a live signal', async () => {
    const time = new ManualTime()
    const signals = new CallSignals(time, 1_600)
    const hung = hangingCall(signals)
    const reason = new Error('closed')
    signals.abortAll(reason)
    await expect(hung.settled).rejects.toBe(reason)
    expect(time.pending).toBe(0)
    const later = hangingCall(signals)
    expect(later.signal.aborted).toBe(false)
  })

  test('abortAll leaves alone a signal whose calls all settled, and the timer of the waits queue', async () => {
    const time = new ManualTime()
    const signals = new CallSignals(time, 1_600)
    const done = hangingCall(signals)
    done.finish()
    await done.settled
    // A wait the runner queued and cancelled once its call settled: the queue's timer stays armed.
    signals.timeouts.cancel(signals.timeouts.add(() => undefined))
    signals.abortAll(new Error('closed'))
    expect(done.signal.aborted).toBe(false)
    expect(time.pending).toBe(0)
  })

  test('a timeout at the timer limit leaves no room for a slice: each call gets its own signal', () => {
    const time = new ManualTime()
    const signals = new CallSignals(time, 2_147_483_647)
    expect(hangingCall(signals).signal).not.toBe(hangingCall(signals).signal)
  })

  // Found by a review (session 51): the slice was made current before its timer was armed, so timers
  // that refused once threw out of call() (not a rejection its caller handles) and left a slice whose
  // signal no timeout would ever abort, handed to every call after it.
  test('timers that refuse to arm a slice: that call rejects, and the next gets a slice that times out', async () => {
    const time = new ManualTime()
    let refusals = 1
    const timers = refusingTimers(time, () => refusals-- > 0)
    const signals = new CallSignals(timers, 1_600)
    let made = 0
    let refused: unknown
    try {
      await signals.call(async () => made++)
    } catch (error) {
      refused = error
    }
    expect((refused as Error).message).toBe('timers refused')
    expect(made).toBe(0)
    const next = hangingCall(signals)
    await expectAbortAt(time, next.signal, 1_700)
  })
})
