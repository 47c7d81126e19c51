import { describe, expect, test } from 'vitest'
import {
  createLeaseRecord,
  MAX_FENCING_TOKEN,
  MAX_TTL_MS,
  raceAbort,
  validateCallOptions,
  validateId,
  validateRecord,
  validateState,
  validateTtl,
} from '../src/index.js'

const invalid = { code: 'INVALID_ARGUMENT' }

describe('validateId', () => {
  test.each(['a', 'x'.repeat(255), '🚀'.repeat(127), 'tab\there', 'e\u0301'])('accepts %j', (id) => {
    expect(() => validateId('workId', id)).not.toThrow()
  })
  test.each([
    ['empty', ''],
    ['too long', 'x'.repeat(256)],
    ['NUL', 'a\u0000'],
    ['lone high surrogate', '\uD83D'],
    ['lone low surrogate', 'x\uDE80'],
    ['number', 1],
    ['undefined', undefined],
  ])('rejects %s, naming the argument', (_label, id) => {
    expect(() => validateId('holderId', id)).toThrow(expect.objectContaining(invalid))
    expect(() => validateId('holderId', id)).toThrow(/holderId/)
  })
})

describe('validateTtl', () => {
  test.each([1, 1000, MAX_TTL_MS])('accepts %d', (ttl) => expect(() => validateTtl(ttl)).not.toThrow())
  test.each([0, -5, 0.5, MAX_TTL_MS + 1, Number.NaN, '10', 10n, null])('rejects %s', (ttl) => {
    expect(() => validateTtl(ttl)).toThrow(expect.objectContaining(invalid))
  })
})

describe('validateState', () => {
  test('accepts Uint8Array and Buffer up to the limit', () => {
    expect(() => validateState(new Uint8Array(4), 4)).not.toThrow()
    expect(() => validateState(Buffer.alloc(4), 4)).not.toThrow()
  })
  test('rejects oversized state with both sizes in the message', () => {
    expect(() => validateState(new Uint8Array(5), 4)).toThrow(/5 bytes.*at most 4/)
  })
  test.each([[[1]], ['s'], [new ArrayBuffer(1)], [new Int8Array(1)]])('rejects %o', (state) => {
    expect(() => validateState(state, 10)).toThrow(expect.objectContaining(invalid))
  })
})

describe('validateRecord', () => {
  const record = createLeaseRecord('w', 'h', 1n, Date.now())
  test('accepts what createLeaseRecord makes, which is frozen', () => {
    expect(() => validateRecord(record)).not.toThrow()
    expect(Object.isFrozen(record)).toBe(true)
  })
  test('accepts the largest token', () => {
    expect(() => validateRecord({ ...record, fencingToken: MAX_FENCING_TOKEN })).not.toThrow()
  })
  test.each([
    ['token 0n', { ...record, fencingToken: 0n }],
    ['token above int64', { ...record, fencingToken: MAX_FENCING_TOKEN + 1n }],
    ['token as number', { ...record, fencingToken: 1 }],
    ['bad date', { ...record, expiresAt: new Date(Number.NaN) }],
    ['date as number', { ...record, expiresAt: 5 }],
    ['missing holder', { workId: 'w', fencingToken: 1n, expiresAt: new Date() }],
  ])('rejects %s', (_label, bad) => {
    expect(() => validateRecord(bad)).toThrow(expect.objectContaining(invalid))
  })
})

describe('validateCallOptions', () => {
  test('throws the reason of an aborted signal as is', () => {
    const reason = new Error('stop')
    expect(() => validateCallOptions({ signal: AbortSignal.abort(reason) })).toThrow(reason)
  })
  test('accepts no options, empty options and a live signal', () => {
    expect(() => validateCallOptions(undefined)).not.toThrow()
    expect(() => validateCallOptions({})).not.toThrow()
    expect(() => validateCallOptions({ signal: new AbortController().signal })).not.toThrow()
  })
  test('rejects a signal that is not one', () => {
    expect(() => validateCallOptions({ signal: {} })).toThrow(expect.objectContaining(invalid))
  })
})

describe('raceAbort', () => {
  test('passes the result through without a signal or before it fires', async () => {
    expect(await raceAbort(Promise.resolve(1), undefined)).toBe(1)
    expect(await raceAbort(Promise.resolve(2), new AbortController().signal)).toBe(2)
  })
  test('rejects with the reason as soon as the signal fires, leaving no unhandled rejection', async () => {
    const controller = new AbortController()
    const reason = new Error('caller gave up')
    let fail!: (error: Error) => void
    const pending = new Promise<never>((_resolve, reject) => {
      fail = reject
    })
    const raced = raceAbort(pending, controller.signal)
    controller.abort(reason)
    await expect(raced).rejects.toBe(reason)
    fail(new Error('the store failed later'))
  })
  test('an already-aborted signal rejects at once', async () => {
    const reason = new Error('already')
    await expect(raceAbort(new Promise(() => {}), AbortSignal.abort(reason))).rejects.toBe(reason)
  })
})
