import { expect, test } from 'vitest'
import { SentTexts } from '../src/targets/sent-texts.js'

// Found by a review (session 49): every 4th send of a side, over a lease cycle of exactly four
// commands from one worker, described the acquire only.
test('sampling one send in 4 still sees every command of a 4-command cycle', () => {
  const sent = new SentTexts(4)
  const stop = sent.start()
  for (let cycle = 0; cycle < 1_000; cycle++)
    for (const command of ['acquire', 'checkpoint', 'renew', 'release'])
      sent.record('worklease', () => command)
  expect([...stop().worklease].sort()).toEqual(['acquire', 'checkpoint', 'release', 'renew'])
})

test('nothing is described outside a recording, everything with no sampling', () => {
  const sent = new SentTexts()
  let described = 0
  sent.record('baseline', () => `${++described}`)
  const stop = sent.start()
  for (let i = 0; i < 10; i++) sent.record('baseline', () => `${++described}`)
  expect(stop().baseline).toHaveLength(10)
  expect(described).toBe(10)
})
