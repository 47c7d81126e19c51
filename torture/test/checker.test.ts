import { describe, expect, test } from 'vitest'
import { type CheckName, checkHistory, historySlice } from '../src/checker.js'
import type { Op } from '../src/history.js'
import { op } from './ops.js'

const checks = (ops: Op[]): CheckName[] => [...new Set(checkHistory(ops).map((v) => v.check))].sort()

// A clean history: A takes token 1, checkpoints, releases; B takes token 2, reads A's state and a
// clean handoff; B walks away; C takes token 3 after B's lease expired and sees an unclean handoff.
const good = (): Op[] => [
  op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 2, ttl: 100 }),
  op('checkpoint', { holder: 'A', token: 1, value: 'a1', invoke: 3, complete: 4, ttl: 100 }),
  op('readCheckpoint', { holder: 'A', token: 1, invoke: 5, complete: 6, read: 'a1', clean: true }),
  op('release', { holder: 'A', token: 1, invoke: 7, complete: 8 }),
  op('acquire', { holder: 'C', invoke: 7.5, complete: 7.9, outcome: 'fail', code: 'LEASE_HELD' }),
  op('acquire', { holder: 'B', token: 2, invoke: 9, complete: 10, ttl: 100 }),
  op('readCheckpoint', { holder: 'B', token: 2, invoke: 11, complete: 12, read: 'a1', clean: true }),
  op('checkpoint', {
    holder: 'A',
    token: 1,
    value: 'late',
    invoke: 13,
    complete: 14,
    outcome: 'fail',
    code: 'FENCED',
  }),
  op('checkpoint', { holder: 'B', token: 2, value: 'b1', invoke: 15, complete: 16, ttl: 100 }),
  op('acquire', { holder: 'C', token: 3, invoke: 200, complete: 201, ttl: 100 }),
  op('readCheckpoint', { holder: 'C', token: 3, invoke: 202, complete: 203, read: 'b1', clean: false }),
  op('renew', { holder: 'B', token: 2, invoke: 204, complete: 205, outcome: 'fail', code: 'FENCED' }),
]

describe('checker', () => {
  test('a correct history passes every check', () => {
    expect(checkHistory(good())).toEqual([])
  })

  test('indeterminate operations may or may not have happened', () => {
    const ops = [
      op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1 }),
      op('checkpoint', { holder: 'A', token: 1, value: 'maybe', invoke: 2, outcome: 'info' }),
      op('release', { holder: 'A', token: 1, invoke: 3, outcome: 'info' }),
      // The release's reply was lost; the next holder may see a clean handoff and the lost write...
      op('acquire', { holder: 'B', token: 2, invoke: 10, complete: 11 }),
      op('readCheckpoint', { holder: 'B', token: 2, invoke: 12, complete: 13, read: 'maybe', clean: true }),
      // ... and a lost acquire explains a token nobody was told about.
      op('acquire', { holder: 'C', invoke: 20, outcome: 'info' }),
      op('acquire', { holder: 'D', token: 4, invoke: 5_000, complete: 5_001 }),
      op('readCheckpoint', {
        holder: 'D',
        token: 4,
        invoke: 5_002,
        complete: 5_003,
        read: 'maybe',
        clean: false,
      }),
    ]
    expect(checkHistory(ops)).toEqual([])
    // The same history where B read nothing instead is fine too (the write may not have landed).
    const other = ops.map((o) => (o.holder === 'B' && o.op === 'readCheckpoint' ? { ...o, read: null } : o))
    expect(checkHistory(other).map((v) => v.check)).toEqual([])
  })

  const bad: [CheckName, () => Op[]][] = [
    [
      'duplicate-token',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 5 }),
        op('acquire', { holder: 'B', token: 1, invoke: 1, complete: 6 }),
      ],
    ],
    [
      'token-order',
      () => [
        op('acquire', { holder: 'A', token: 2, invoke: 0, complete: 1, ttl: 10 }),
        op('acquire', { holder: 'B', token: 1, invoke: 50, complete: 51 }),
        op('acquire', { holder: 'C', invoke: 60, outcome: 'info' }),
      ],
    ],
    [
      'token-gap',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1, ttl: 10 }),
        op('acquire', { holder: 'B', token: 3, invoke: 50, complete: 51 }),
      ],
    ],
    [
      'valid-after-end',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1, ttl: 10 }),
        op('acquire', { holder: 'B', token: 2, invoke: 50, complete: 51 }),
        op('renew', { holder: 'A', token: 1, invoke: 60, complete: 61 }),
      ],
    ],
    [
      'fenced-while-valid',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1 }),
        op('renew', { holder: 'A', token: 1, invoke: 2, complete: 3, outcome: 'fail', code: 'FENCED' }),
      ],
    ],
    [
      'interleaved-checkpoints',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1, ttl: 10 }),
        op('acquire', { holder: 'B', token: 2, invoke: 50, complete: 51 }),
        op('checkpoint', { holder: 'B', token: 2, value: 'b', invoke: 52, complete: 53 }),
        // A's write lands after B's was acknowledged: the store did not fence it.
        op('checkpoint', { holder: 'A', token: 1, value: 'a', invoke: 54, complete: 55 }),
      ],
    ],
    [
      'phantom-state',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1 }),
        op('readCheckpoint', { holder: 'A', token: 1, invoke: 2, complete: 3, read: 'nobody wrote this' }),
      ],
    ],
    [
      'failed-checkpoint-visible',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1, ttl: 10 }),
        op('acquire', { holder: 'B', token: 2, invoke: 50, complete: 51 }),
        op('checkpoint', {
          holder: 'A',
          token: 1,
          value: 'a',
          invoke: 52,
          complete: 53,
          outcome: 'fail',
          code: 'FENCED',
        }),
        op('readCheckpoint', { holder: 'B', token: 2, invoke: 54, complete: 55, read: 'a', clean: false }),
      ],
    ],
    [
      'read-from-future',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1 }),
        op('readCheckpoint', { holder: 'A', token: 1, invoke: 2, complete: 3, read: 'later' }),
        op('checkpoint', { holder: 'A', token: 1, value: 'later', invoke: 4, complete: 5 }),
      ],
    ],
    [
      'stale-read',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1 }),
        op('checkpoint', { holder: 'A', token: 1, value: 'a1', invoke: 2, complete: 3 }),
        op('checkpoint', { holder: 'A', token: 1, value: 'a2', invoke: 4, complete: 5 }),
        op('release', { holder: 'A', token: 1, invoke: 6, complete: 7 }),
        op('acquire', { holder: 'B', token: 2, invoke: 8, complete: 9 }),
        // The acknowledged a2 was lost.
        op('readCheckpoint', { holder: 'B', token: 2, invoke: 10, complete: 11, read: 'a1', clean: true }),
      ],
    ],
    [
      'clean-handoff',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1, ttl: 10 }),
        op('acquire', { holder: 'B', token: 2, invoke: 50, complete: 51 }),
        // A never released, yet B is told the handoff was clean.
        op('readCheckpoint', { holder: 'B', token: 2, invoke: 52, complete: 53, read: null, clean: true }),
      ],
    ],
    [
      'early-takeover',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1, ttl: 1_000 }),
        op('renew', { holder: 'A', token: 1, invoke: 500, complete: 501, ttl: 1_000 }),
        // Taken at 900 ms although A's renew at 500 ms moved the expiry to >= 1500 ms.
        op('acquire', { holder: 'B', token: 2, invoke: 899, complete: 900 }),
      ],
    ],
    [
      'held-when-free',
      () => [
        op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1 }),
        op('release', { holder: 'A', token: 1, invoke: 2, complete: 3 }),
        op('acquire', { holder: 'B', invoke: 4, complete: 5, outcome: 'fail', code: 'LEASE_HELD' }),
      ],
    ],
  ]

  // Interleaved checkpoints are a special case of a write succeeding after its lease ended.
  const implied: Partial<Record<CheckName, CheckName[]>> = { 'interleaved-checkpoints': ['valid-after-end'] }

  test.each(bad)('a history breaking %s is caught, and only by that check', (name, history) => {
    expect(checks(history())).toEqual([name, ...(implied[name] ?? [])].sort())
  })

  test('early-takeover respects a shorter later ttl and clock offsets', () => {
    const ops = [
      op('acquire', { holder: 'A', token: 1, invoke: 0, complete: 1, ttl: 2_000 }),
      // A checkpoint with a short ttl moved the expiry earlier: taking over at 400 ms is fine.
      op('checkpoint', { holder: 'A', token: 1, value: 'a', invoke: 100, complete: 101, ttl: 200 }),
      op('acquire', { holder: 'B', token: 2, invoke: 399, complete: 400, ttl: 1_000 }),
      // C's clock runs 800 ms ahead, so it may see B's lease expired at 700 ms of real time.
      op('acquire', { holder: 'C', token: 3, invoke: 699, complete: 700, offsetAtInvoke: 800 }),
    ]
    expect(checkHistory(ops)).toEqual([])
    const noOffset = ops.map((o) => (o.holder === 'C' ? { ...o, offsetAtInvoke: 0, offsetAtComplete: 0 } : o))
    expect(checks(noOffset)).toEqual(['early-takeover'])
  })

  test('every check can fail: the list above covers all of them', () => {
    const all: CheckName[] = [
      'duplicate-token',
      'token-order',
      'token-gap',
      'valid-after-end',
      'fenced-while-valid',
      'interleaved-checkpoints',
      'phantom-state',
      'failed-checkpoint-visible',
      'read-from-future',
      'stale-read',
      'clean-handoff',
      'early-takeover',
      'held-when-free',
    ]
    expect(bad.map(([name]) => name).sort()).toEqual([...all].sort())
  })

  test('a violation prints the history slice around it, involved ops marked', () => {
    const ops = bad.find(([name]) => name === 'stale-read')![1]()
    const [violation] = checkHistory(ops)
    const slice = historySlice(ops, violation!)
    expect(slice).toContain('>>')
    expect(slice).toContain('value=a2')
    expect(slice.split('\n').length).toBeGreaterThanOrEqual(3)
  })
})
