import { getEventListeners } from 'node:events'
import { describe, expect, test } from 'vitest'
import {
  createLeaseRecord,
  MAX_FENCING_TOKEN,
  MAX_TTL_MS,
  nextCheckpointSequence,
  raceAbort,
  recordExpiresAtMs,
  validateCallOptions,
  validateCheckpointArgs,
  validateId,
  validateRecord,
  validateRecordArgs,
  validateRenewArgs,
  validateRenewManyArgs,
  validateRevokeArgs,
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
  test('rejects a view whose buffer was detached, or shrunk past it, as INVALID_ARGUMENT', () => {
    const detached = new Uint8Array(8)
    structuredClone(detached.buffer, { transfer: [detached.buffer] })
    // Resizable buffers are in Node.js 20, not in this project's ES2023 lib.
    type Resizable = ArrayBuffer & { resize(byteLength: number): void }
    const Resizable = ArrayBuffer as unknown as new (length: number, options: object) => Resizable
    const resizable = new Resizable(8, { maxByteLength: 16 })
    const shrunk = new Uint8Array(resizable, 4, 4)
    resizable.resize(2)
    for (const state of [detached, shrunk]) {
      expect(() => validateState(state, 10)).toThrow(expect.objectContaining(invalid))
      expect(() => validateState(state, 10, { kept: true })).toThrow(expect.objectContaining(invalid))
    }
  })
})

describe('recordExpiresAtMs', () => {
  test('reads the expiry a record was made with, whatever its Date was set to since', () => {
    const record = createLeaseRecord('w', 'h', 1n, 1_000)
    for (const time of [Number.NaN, -8.64e15, 5]) {
      record.expiresAt.setTime(time)
      expect(recordExpiresAtMs(record)).toBe(1_000)
      expect(recordExpiresAtMs(validateRecord(record))).toBe(1_000)
    }
  })

  test("validates any other object first, and reads the snapshot's expiry", () => {
    const expiresAt = new Date(2_000)
    expect(recordExpiresAtMs({ workId: 'w', holderId: 'h', fencingToken: 1n, expiresAt })).toBe(2_000)
    expect(() =>
      recordExpiresAtMs({ workId: 'w', holderId: 'h', fencingToken: 1n, expiresAt: new Date(Number.NaN) }),
    ).toThrow(expect.objectContaining(invalid))
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
  test("names the record's field it refuses, as it names record.fencingToken", () => {
    expect(() => validateRecord({ ...record, workId: '' })).toThrow(/^record\.workId /)
    expect(() => validateRecord({ ...record, holderId: 5 })).toThrow(/^record\.holderId /)
  })
})

describe('lying input is read once', () => {
  const good = createLeaseRecord('w', 'h', 1n, Date.now())

  /** A record whose getters answer `first` on the first read and `later` on every read after it. */
  function shapeShifter(first: Record<string, unknown>, later: Record<string, unknown>) {
    const reads = new Map<string, number>()
    const record = {}
    for (const key of Object.keys(first)) {
      Object.defineProperty(record, key, {
        enumerable: true,
        get() {
          const n = (reads.get(key) ?? 0) + 1
          reads.set(key, n)
          return n === 1 ? first[key] : later[key]
        },
      })
    }
    return { record, reads }
  }

  test('validateRecord returns a frozen snapshot of primitives, reading each property once', () => {
    const { record, reads } = shapeShifter({ ...good }, { ...good, workId: { $ne: null }, holderId: 'evil' })
    const snapshot = validateRecord(record)
    expect([...reads.values()]).toEqual([1, 1, 1, 1])
    expect(snapshot).toEqual(good)
    expect(Object.isFrozen(snapshot)).toBe(true)
    // A second read of the caller's object lies; the snapshot does not.
    expect((record as { holderId: string }).holderId).toBe('evil')
    expect(snapshot.holderId).toBe('h')
  })

  test('a record createLeaseRecord made is trusted as it is: frozen data cannot lie', () => {
    expect(validateRecord(good)).toBe(good)
    const copy = { ...good }
    expect(validateRecord(copy)).not.toBe(copy)
  })

  test("the snapshot has its own Date, not the caller's mutable one", () => {
    const expiresAt = new Date(1_000)
    const snapshot = validateRecord({ ...good, expiresAt })
    expiresAt.setTime(2_000)
    expect(snapshot.expiresAt.getTime()).toBe(1_000)
  })

  test('a getter that throws, a Proxy date and a Date lookalike are bad input', () => {
    const throwing = Object.defineProperty({ ...good }, 'holderId', {
      get() {
        throw new Error('boom')
      },
    })
    expect(() => validateRecord(throwing)).toThrow(expect.objectContaining(invalid))
    const lookalike = { getTime: () => 5, [Symbol.toStringTag]: 'Date' }
    expect(() => validateRecord({ ...good, expiresAt: lookalike })).toThrow(expect.objectContaining(invalid))
    expect(() => validateRecord({ ...good, expiresAt: new Proxy(new Date(), {}) })).toThrow(
      expect.objectContaining(invalid),
    )
  })

  test('validateRecordArgs, validateRenewArgs and validateCheckpointArgs hand back the snapshot', () => {
    const { record } = shapeShifter({ ...good }, { ...good, fencingToken: 99n })
    expect(validateRecordArgs(record, undefined).record.fencingToken).toBe(1n)
    const { record: again } = shapeShifter({ ...good }, { ...good, fencingToken: 99n })
    expect(validateRenewArgs(again, 10, undefined).record.fencingToken).toBe(1n)
    const { record: third } = shapeShifter({ ...good }, { ...good, fencingToken: 99n })
    expect(validateCheckpointArgs(third, new Uint8Array(1), 10, 8, undefined).record.fencingToken).toBe(1n)
  })

  test('options are read once: a signal getter cannot hand the store another signal', () => {
    let reads = 0
    const live = new AbortController().signal
    const options = {
      get signal() {
        reads++
        return reads === 1 ? live : AbortSignal.abort()
      },
    }
    expect(validateCallOptions(options).signal).toBe(live)
    expect(reads).toBe(1)
  })

  test("state is copied: later writes to the caller's buffer change nothing", () => {
    const state = Buffer.from('abc')
    const copy = validateState(state, 10)
    state[0] = 0x7a
    expect(new TextDecoder().decode(copy)).toBe('abc')
    expect(copy).toBeInstanceOf(Uint8Array)
  })

  test('copies never share a byte: small ones across slabs, a large one in its own buffer', () => {
    // Sizes that do not divide the slab, so some copies end exactly at its end and others start a new one.
    const copies = Array.from({ length: 200 }, (_, index) => {
      const size = [0, 1, 7, 8, 1023, 4096][index % 6]!
      return validateState(new Uint8Array(size).fill(index % 251), 4096)
    })
    copies.forEach((copy, index) => {
      copy.fill(0xff)
      for (const [other, otherCopy] of copies.slice(index + 1).entries()) {
        const owner = index + 1 + other
        expect(otherCopy.every((byte) => byte === owner % 251)).toBe(true)
      }
      expect(copy.byteOffset % 8).toBe(0)
    })
    const large = validateState(new Uint8Array(4097), 1 << 20)
    expect(large.byteLength).toBe(large.buffer.byteLength)
    const kept = validateState(new Uint8Array([1, 2, 3]), 10, { kept: true })
    expect([kept.buffer.byteLength, ...kept]).toEqual([3, 1, 2, 3])
  })

  test('a Proxy or an object dressed as a Uint8Array is not state', () => {
    const real = new Uint8Array(4)
    expect(() => validateState(new Proxy(real, {}), 10)).toThrow(expect.objectContaining(invalid))
    const dressed = Object.setPrototypeOf({ byteLength: 1, length: 1, 0: 1 }, Uint8Array.prototype)
    expect(() => validateState(dressed, 10)).toThrow(expect.objectContaining(invalid))
    // A real array whose byteLength is shadowed cannot hide its size.
    const lying = Object.defineProperty(new Uint8Array(64), 'byteLength', { value: 1 })
    expect(() => validateState(lying, 8)).toThrow(/64 bytes/)
  })
})

describe('checkpoint sequences', () => {
  test('nextCheckpointSequence strictly increases and stays a safe integer', () => {
    const drawn = Array.from({ length: 1_000 }, () => nextCheckpointSequence())
    for (let i = 1; i < drawn.length; i++) expect(drawn[i]).toBeGreaterThan(drawn[i - 1] as number)
    expect(drawn.every(Number.isSafeInteger)).toBe(true)
  })
  test("validateCheckpointArgs draws one when none is given and keeps the caller's", () => {
    const record = createLeaseRecord('w', 'h', 1n, Date.now())
    const before = nextCheckpointSequence()
    expect(validateCheckpointArgs(record, new Uint8Array(1), 10, 8, undefined).sequence).toBeGreaterThan(
      before,
    )
    expect(validateCheckpointArgs(record, new Uint8Array(1), 10, 8, { sequence: 3 }).sequence).toBe(3)
  })
  test.each([0, -1, 1.5, Number.MAX_SAFE_INTEGER + 1, '3', 3n, null])('rejects sequence %s', (sequence) => {
    const record = createLeaseRecord('w', 'h', 1n, Date.now())
    expect(() => validateCheckpointArgs(record, new Uint8Array(1), 10, 8, { sequence })).toThrow(
      expect.objectContaining(invalid),
    )
  })
})

describe('validateRevokeArgs', () => {
  test('a workId alone, or with a signal and an expected token in 1n..MAX_FENCING_TOKEN', () => {
    expect(validateRevokeArgs('w', undefined)).toEqual({ workId: 'w' })
    expect(validateRevokeArgs('w', {})).toEqual({ workId: 'w' })
    expect(validateRevokeArgs('w', { fencingToken: 1n })).toEqual({ workId: 'w', fencingToken: 1n })
    const { signal } = new AbortController()
    expect(validateRevokeArgs('w', { signal, fencingToken: MAX_FENCING_TOKEN })).toEqual({
      workId: 'w',
      fencingToken: MAX_FENCING_TOKEN,
      signal,
    })
  })
  test.each([0n, -1n, MAX_FENCING_TOKEN + 1n, 1, '1', null, { valueOf: () => 1n }])(
    'rejects fencingToken %s',
    (fencingToken) => {
      expect(() => validateRevokeArgs('w', { fencingToken })).toThrow(
        expect.objectContaining({ ...invalid, message: expect.stringContaining('options.fencingToken') }),
      )
    },
  )
  test('rejects a bad workId and options that are not an object', () => {
    expect(() => validateRevokeArgs('', { fencingToken: 1n })).toThrow(expect.objectContaining(invalid))
    expect(() => validateRevokeArgs('w', 'now')).toThrow(expect.objectContaining(invalid))
  })
  test('the options are read once: a token getter cannot show the store another token', () => {
    let reads = 0
    const options = {
      get fencingToken() {
        reads++
        return reads === 1 ? 7n : undefined
      },
    }
    const args = validateRevokeArgs('w', options)
    expect(args.fencingToken).toBe(7n)
    expect(reads).toBe(1)
  })
  test('a getter that throws is bad input; an aborted signal throws its reason first', () => {
    const throwing = {
      get fencingToken(): bigint {
        throw new Error('gone')
      },
    }
    expect(() => validateRevokeArgs('w', throwing)).toThrow(
      expect.objectContaining({ ...invalid, message: 'options could not be read' }),
    )
    const reason = new Error('stop')
    expect(() => validateRevokeArgs('w', { signal: AbortSignal.abort(reason), fencingToken: 0n })).toThrow(
      reason,
    )
  })
})

describe('createLeaseRecord', () => {
  test.each([0n, MAX_FENCING_TOKEN + 1n, -1n])('refuses token %s from a store as corrupt', (token) => {
    expect(() => createLeaseRecord('w', 'h', token, 0)).toThrow(RangeError)
  })

  // Found by a review (session 36): such a record was made, and validateRecord, which refuses a copy
  // of it, trusted it as its own.
  test.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 8.64e15 + 1, -8.64e15 - 1])(
    'refuses expiry %s from a store as corrupt',
    (ms) => {
      expect(() => createLeaseRecord('w', 'h', 1n, ms)).toThrow(RangeError)
    },
  )
  test.each([8.64e15, -8.64e15])('takes expiry %s, the edge a Date holds', (ms) => {
    expect(createLeaseRecord('w', 'h', 1n, ms).expiresAt.getTime()).toBe(ms)
  })

  // Found by a review (session 48): the ids went unchecked, and every validator trusts a record made
  // here, so a user's rebuilt record took bad ids to the store; holderId '' (a revoked lease's) matched
  // the revoked lease, and its release told the next holder the handoff was clean.
  test.each([
    ['', 'h'],
    ['w', ''],
    ['x'.repeat(1_000), 'h'],
    ['a\u0000b', 'h'],
    ['\uD800', 'h'],
  ])('refuses ids (case %#) as any call does', (workId, holderId) => {
    expect(() => createLeaseRecord(workId, holderId, 1n, 0)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
  })
})

describe('validateCallOptions', () => {
  // Found by a review (session 48): a lookalike's throwIfAborted and addEventListener were read to
  // check their type and again to be called, so a getter decided what was called.
  test('a lookalike aborted signal: throwIfAborted read once, and the call throws its reason', () => {
    const reason = new Error('given up')
    let reads = 0
    const signal = {
      aborted: true,
      reason,
      addEventListener() {},
      get throwIfAborted() {
        reads++
        return reads === 1
          ? () => {
              throw reason
            }
          : undefined
      },
    }
    expect(() => validateCallOptions({ signal } as never)).toThrow(reason)
    expect(reads).toBe(1)
  })

  test('a lookalike that says it aborted and whose throwIfAborted does not throw is refused', () => {
    const signal = {
      aborted: true,
      reason: new Error('given up'),
      addEventListener() {},
      throwIfAborted() {},
    }
    expect(() => validateCallOptions({ signal } as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
  })

  test('a lookalike live signal: addEventListener read once, and that one called', () => {
    let reads = 0
    const subscribed: string[] = []
    const signal = {
      aborted: false,
      throwIfAborted() {},
      get addEventListener() {
        reads++
        const which = reads === 1 ? 'first' : 'later'
        return () => subscribed.push(which)
      },
    }
    validateCallOptions({ signal } as never)
    expect({ reads, subscribed }).toEqual({ reads: 1, subscribed: ['first'] })
  })

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
  test('rejects a signal that only looks like one, or cannot be read, as INVALID_ARGUMENT', () => {
    const throwing = Object.defineProperty({ addEventListener() {}, throwIfAborted() {} }, 'aborted', {
      get() {
        throw new Error('boom')
      },
    })
    for (const signal of [
      { aborted: false, addEventListener() {} },
      throwing,
      Object.create(AbortSignal.prototype),
    ]) {
      expect(() => validateCallOptions({ signal })).toThrow(expect.objectContaining(invalid))
    }
  })
  test('reads aborted once: a signal that says it has not aborted is not asked to throw', () => {
    let asked = 0
    const lying = {
      aborted: false,
      addEventListener() {},
      throwIfAborted() {
        asked++
        throw new TypeError('aborted after all')
      },
    }
    expect(validateCallOptions({ signal: lying }).signal).toBeInstanceOf(AbortSignal)
    expect(asked).toBe(0)
  })

  // Found by a review (session 41): a lookalike was handed to the driver as it was, and one whose
  // addEventListener threw was found out when the driver subscribed, as its request went out: the
  // write landed, and the caller got that raw error (or an unhandled rejection).
  test('a lookalike signal whose addEventListener throws is INVALID_ARGUMENT at validation', () => {
    const refusing = {
      aborted: false,
      addEventListener() {
        throw new Error('addEventListener refused')
      },
      throwIfAborted() {},
    }
    expect(() => validateCallOptions({ signal: refusing })).toThrow(expect.objectContaining(invalid))
  })

  test('a lookalike is followed by an AbortSignal of its own, linked once however many calls share it', () => {
    const listeners: ((event: unknown) => void)[] = []
    const lookalike = {
      aborted: false,
      reason: undefined as unknown,
      addEventListener(_type: string, listener: (event: unknown) => void) {
        listeners.push(listener)
      },
      throwIfAborted() {},
    }
    const first = validateCallOptions({ signal: lookalike }).signal!
    const second = validateCallOptions({ signal: lookalike }).signal!
    expect(second).toBe(first)
    expect(listeners).toHaveLength(1)
    const reason = new Error('given up')
    lookalike.reason = reason
    lookalike.aborted = true
    listeners[0]!({ type: 'abort' })
    expect({ aborted: first.aborted, reason: first.reason }).toEqual({ aborted: true, reason })
  })

  test("this realm's AbortSignal is handed on as it is; one with a method of its own is followed", () => {
    const { signal } = new AbortController()
    expect(validateCallOptions({ signal }).signal).toBe(signal)
    const shadowed = new AbortController().signal
    Object.defineProperty(shadowed, 'addEventListener', {
      value() {
        throw new Error('addEventListener refused')
      },
    })
    expect(() => validateCallOptions({ signal: shadowed })).toThrow(expect.objectContaining(invalid))
  })
})

describe('validateRenewManyArgs', () => {
  test('a revoked Proxy for records is INVALID_ARGUMENT', () => {
    const { proxy, revoke } = Proxy.revocable([], {})
    revoke()
    expect(() => validateRenewManyArgs(proxy, 1_000, 10, undefined)).toThrow(expect.objectContaining(invalid))
  })
})

/** Promise.withResolvers, which Node.js 20 lacks. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((settle) => {
    resolve = settle
  })
  return { promise, resolve }
}

describe('raceAbort', () => {
  // The second found by a review of the shared listener: subscribing came before observing the call.
  test.each([
    [
      'a signal it cannot subscribe to',
      {
        aborted: false,
        addEventListener() {
          throw new Error('addEventListener refused')
        },
        removeEventListener() {},
      },
      'addEventListener refused',
    ],
    ['a signal that is no object', 'yes', TypeError],
  ])('%s rejects the race, and the call failing later is still observed', async (_, signal, refusal) => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      let fail!: (error: Error) => void
      const pending = new Promise<never>((_, reject) => {
        fail = reject
      })
      await expect(raceAbort(pending, signal as unknown as AbortSignal)).rejects.toThrow(refusal)
      fail(new Error('the store failed'))
      await new Promise((resolve) => setImmediate(resolve))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  // Every call subscribed a listener of its own: an addEventListener and a removeEventListener on a
  // Node.js AbortSignal each time, most of what a signal cost a call (the runner passes one to many).
  test('calls overlapping on one signal hold one listener of it, and none once they settled', async () => {
    const controller = new AbortController()
    const answers = Array.from({ length: 40 }, () => deferred<number>())
    const raced = answers.map((answer) => raceAbort(answer.promise, controller.signal))
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    for (const [index, answer] of answers.entries()) answer.resolve(index)
    expect(await Promise.all(raced)).toEqual(answers.map((_, index) => index))
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  test('an abort rejects every call still out on the signal, in order, and none that settled', async () => {
    const controller = new AbortController()
    const reason = new Error('caller gave up')
    const answers = Array.from({ length: 100 }, () => deferred<number>())
    const outcomes: string[] = []
    const raced = answers.map((answer, index) =>
      raceAbort(answer.promise, controller.signal).then(
        (value) => outcomes.push(`answered ${value}`),
        (error: unknown) => outcomes.push(error === reason ? `aborted ${index}` : 'other'),
      ),
    )
    // Most settle first (past the point where the ended ones are dropped), then the signal fires.
    for (const [index, answer] of answers.entries()) if (index % 10 !== 3) answer.resolve(index)
    await new Promise((resolve) => setImmediate(resolve))
    controller.abort(reason)
    for (const answer of answers) answer.resolve(-1)
    await Promise.all(raced)
    expect(outcomes.slice(90)).toEqual(
      [3, 13, 23, 33, 43, 53, 63, 73, 83, 93].map((index) => `aborted ${index}`),
    )
    expect(outcomes.filter((outcome) => outcome.startsWith('answered'))).toHaveLength(90)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    // A later call on the aborted signal rejects at once, as ever.
    await expect(raceAbort(Promise.resolve(1), controller.signal)).rejects.toBe(reason)
  })

  // Found by a review of the shared listener: it was added before the wait it must find.
  test('a lookalike that calls its listener as it is added rejects the race at once', async () => {
    const reason = new Error('fired')
    const eager = {
      aborted: false,
      reason,
      addEventListener(_type: string, listener: () => void) {
        listener()
      },
      removeEventListener() {},
    } as unknown as AbortSignal
    const never = new Promise<never>(() => undefined)
    const outcome = await Promise.race([
      raceAbort(never, eager).catch((error: unknown) => error),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 50)),
    ])
    expect(outcome).toBe(reason)
  })

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
