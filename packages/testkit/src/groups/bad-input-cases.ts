import { getEventListeners } from 'node:events'
import type { Backend, LeaseRecord } from '@worklease/spec'
import { isWorkleaseError } from '@worklease/spec'
import { check, checkBytes, checkEqual, checkRejects, rejection, show } from '../assertions.js'
import { type CaseContext, forge, LONG_TTL_MS, sleep } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { BAD_IDS, BAD_TTLS, bytes } from './shared.js'

/** The backend as untyped JavaScript callers see it. */
type Loose = Record<keyof Omit<Backend, 'capabilities'>, (...args: unknown[]) => Promise<unknown>>

/** What a call's outcome reads while it has not settled. */
const WAITING = Symbol('waiting')
/**
 * How many `process.nextTick` turns (each draining the microtasks queued so far) a call aborted while
 * out gets to reject: enough for any chain of promises, and no I/O is read in between.
 */
const TICKS_BEFORE_IO = 64
const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve))

const BAD_STATES: ReadonlyArray<[string, unknown]> = [
  ['a string', 'state'],
  ['an array of numbers', [1, 2, 3]],
  ['an ArrayBuffer', new ArrayBuffer(4)],
  ['a Uint16Array', new Uint16Array(2)],
  ['a DataView', new DataView(new ArrayBuffer(2))],
  ['null', null],
  ['undefined', undefined],
]

/**
 * Each operation the backend has, ready to start with a signal: each on a lease of its own, set up
 * first, so that one call's unknown outcome cannot change what another finds.
 */
async function abortableCalls(
  c: CaseContext,
): Promise<Array<[string, (signal: AbortSignal) => Promise<unknown>]>> {
  const b = c.backend
  const held = () => b.acquire(c.workId('aborted'), 'holder-a', LONG_TTL_MS)
  const calls: Array<[string, (signal: AbortSignal) => Promise<unknown>]> = []
  const free = c.workId('aborted')
  calls.push(['acquire', (signal) => b.acquire(free, 'holder-a', LONG_TTL_MS, { signal })])
  const renewed = await held()
  calls.push(['renew', (signal) => b.renew(renewed, LONG_TTL_MS, { signal })])
  const checkpointed = await held()
  calls.push([
    'checkpoint',
    (signal) => b.checkpoint(checkpointed, bytes('aborted'), LONG_TTL_MS, { signal }),
  ])
  const read = await held()
  calls.push(['readCheckpoint', (signal) => b.readCheckpoint(read, { signal })])
  const released = await held()
  calls.push(['release', (signal) => b.release(released, { signal })])
  if (c.capabilities.acquireWithCheckpoint) {
    const taken = c.workId('aborted')
    calls.push([
      'acquireWithCheckpoint',
      (signal) => b.acquireWithCheckpoint!(taken, 'holder-a', LONG_TTL_MS, { signal }),
    ])
  }
  if (c.capabilities.renewMany) {
    const batch = [await held(), await held()]
    calls.push(['renewMany', (signal) => b.renewMany!(batch, LONG_TTL_MS, { signal })])
  }
  if (c.capabilities.list) {
    calls.push(['list', (signal) => b.list!({ prefix: c.prefix, signal })])
  }
  if (c.capabilities.revoke) {
    const revoked = await held()
    calls.push(['revoke', (signal) => b.revoke!(revoked.workId, { signal })])
  }
  return calls
}

function badRecords(record: LeaseRecord): ReadonlyArray<[string, unknown]> {
  const { workId, holderId, fencingToken, expiresAt } = record
  return [
    ['null', null],
    ['undefined', undefined],
    ['a string', 'record'],
    ['an empty object', {}],
    ['token 0n', forge(record, { fencingToken: 0n })],
    ['token -1n', forge(record, { fencingToken: -1n })],
    ['token as a number', forge(record, { fencingToken: Number(fencingToken) })],
    ['token as a string', forge(record, { fencingToken: String(fencingToken) })],
    ['token 2^63', forge(record, { fencingToken: 2n ** 63n })],
    ['an empty workId', forge(record, { workId: '' })],
    ['a numeric workId', forge(record, { workId: 7 })],
    ['a 256-unit holderId', forge(record, { holderId: 'h'.repeat(256) })],
    ['expiresAt as a string', forge(record, { expiresAt: expiresAt.toISOString() })],
    ['expiresAt an invalid Date', forge(record, { expiresAt: new Date(Number.NaN) })],
    ['no fencingToken', { workId, holderId, expiresAt }],
  ]
}

/**
 * Records that show validation one thing and anything reading them again another: getters that answer
 * a valid record on the first read and then store-query operators or objects that stringify to another
 * holder's values, and a Proxy doing the same. Only a backend that uses the validated snapshot is safe.
 */
function shapeShifters(
  intruder: LeaseRecord,
  victim: LeaseRecord,
): ReadonlyArray<[string, () => LeaseRecord]> {
  const asText = (text: string) => ({ toString: () => text, valueOf: () => text })
  const later: ReadonlyArray<[string, Record<keyof LeaseRecord, unknown>]> = [
    [
      'query operators',
      { workId: { $ne: null }, holderId: { $ne: null }, fencingToken: { $gt: 0 }, expiresAt: { $gt: 0 } },
    ],
    [
      "objects that stringify to the victim's values",
      {
        workId: asText(victim.workId),
        holderId: asText(victim.holderId),
        fencingToken: asText(String(victim.fencingToken)),
        expiresAt: victim.expiresAt,
      },
    ],
    ["the victim's own values", { ...victim }],
  ]
  return later.flatMap(([label, values]): Array<[string, () => LeaseRecord]> => {
    const getters = (): LeaseRecord => {
      const reads = new Map<string, number>()
      const record = {}
      for (const key of ['workId', 'holderId', 'fencingToken', 'expiresAt'] as const) {
        Object.defineProperty(record, key, {
          enumerable: true,
          get() {
            const n = (reads.get(key) ?? 0) + 1
            reads.set(key, n)
            return n === 1 ? intruder[key] : values[key]
          },
        })
      }
      return record as LeaseRecord
    }
    const proxy = (): LeaseRecord => {
      const reads = new Map<PropertyKey, number>()
      return new Proxy(
        { ...intruder },
        {
          get(target, key) {
            const n = (reads.get(key) ?? 0) + 1
            reads.set(key, n)
            return n === 1 || !(key in values) ? Reflect.get(target, key) : values[key as keyof LeaseRecord]
          },
        },
      ) as LeaseRecord
    }
    return [
      [`getters turning into ${label}`, getters],
      [`a Proxy turning into ${label}`, proxy],
    ]
  })
}

const BAD_OPTIONS: ReadonlyArray<[string, unknown]> = [
  ['a string', 'fast'],
  ['null', null],
  ['a signal that is not an AbortSignal', { signal: { aborted: false } }],
  ['a signal that is a string', { signal: 'abort' }],
  // Shaped like a signal, but it cannot be listened to: found out only once subscribed, which a
  // backend that subscribes as its request goes out does after the write (session 41).
  [
    'a signal whose addEventListener throws',
    {
      signal: {
        aborted: false,
        reason: undefined,
        addEventListener() {
          throw new Error('addEventListener refused')
        },
        removeEventListener() {},
        throwIfAborted() {},
      },
    },
  ],
]

/** A lease that bad calls must leave exactly as it was, and a free workId they must not create. */
interface Fixture {
  held: LeaseRecord
  free: string
}

async function fixture(c: CaseContext): Promise<Fixture> {
  const held = await c.backend.acquire(c.workId('held'), 'holder-a', LONG_TTL_MS)
  await c.backend.checkpoint(held, bytes('kept'), LONG_TTL_MS)
  return { held, free: c.workId('free') }
}

async function checkUntouched(c: CaseContext, { held, free }: Fixture): Promise<void> {
  await checkRejects(
    () => c.backend.acquire(held.workId, 'holder-b', LONG_TTL_MS),
    'LEASE_HELD',
    'the held lease after bad calls',
  )
  const read = await c.backend.readCheckpoint(held)
  checkBytes(read.state, bytes('kept'), 'state after bad calls')
  await c.backend.release(held)
  checkEqual(
    (await c.backend.acquire(held.workId, 'holder-b', LONG_TTL_MS)).fencingToken,
    2n,
    'next token after bad calls',
  )
  checkEqual(
    (await c.backend.acquire(free, 'holder-b', LONG_TTL_MS)).fencingToken,
    1n,
    'first token of a workId only bad calls named',
  )
}

async function checkInvalid(c: CaseContext, what: string, action: () => Promise<unknown>): Promise<void> {
  const before = c.roundTrips()
  const error = await rejection(action, what)
  if (!isWorkleaseError(error, 'INVALID_ARGUMENT')) {
    throw new Error(`${what}: expected INVALID_ARGUMENT, got ${show(error)}`, { cause: error })
  }
  check(error instanceof Error && error.message.length > 0, `${what}: INVALID_ARGUMENT needs a message`)
  const after = c.roundTrips()
  checkEqual(after, before, `${what}: round trips made for input rejected up front`)
}

export const badInputCases: CaseDefinition[] = [
  {
    name: 'bad workIds and holderIds are INVALID_ARGUMENT on every operation, before any round trip',
    async run(c) {
      const f = await fixture(c)
      const b = c.backend as unknown as Loose
      for (const [label, id] of BAD_IDS) {
        await checkInvalid(c, `acquire with workId ${label}`, () => b.acquire(id, 'holder-b', LONG_TTL_MS))
        await checkInvalid(c, `acquire with holderId ${label}`, () => b.acquire(f.free, id, LONG_TTL_MS))
        if (c.capabilities.acquireWithCheckpoint) {
          await checkInvalid(c, `acquireWithCheckpoint with workId ${label}`, () =>
            b.acquireWithCheckpoint(id, 'holder-b', LONG_TTL_MS),
          )
          await checkInvalid(c, `acquireWithCheckpoint with holderId ${label}`, () =>
            b.acquireWithCheckpoint(f.free, id, LONG_TTL_MS),
          )
        }
        for (const field of ['workId', 'holderId'] as const) {
          const record = forge(f.held, { [field]: id })
          await checkInvalid(c, `renew with record.${field} ${label}`, () => b.renew(record, LONG_TTL_MS))
          await checkInvalid(c, `checkpoint with record.${field} ${label}`, () =>
            b.checkpoint(record, bytes('x'), LONG_TTL_MS),
          )
          await checkInvalid(c, `release with record.${field} ${label}`, () => b.release(record))
          await checkInvalid(c, `readCheckpoint with record.${field} ${label}`, () =>
            b.readCheckpoint(record),
          )
        }
      }
      await checkUntouched(c, f)
    },
  },
  {
    name: 'bad ttls are INVALID_ARGUMENT on acquire, renew and checkpoint',
    async run(c) {
      const f = await fixture(c)
      const b = c.backend as unknown as Loose
      for (const [label, ttl] of BAD_TTLS) {
        await checkInvalid(c, `acquire with ttl ${label}`, () => b.acquire(f.free, 'holder-b', ttl))
        await checkInvalid(c, `acquire of the held lease with ttl ${label}`, () =>
          b.acquire(f.held.workId, 'holder-b', ttl),
        )
        if (c.capabilities.acquireWithCheckpoint) {
          await checkInvalid(c, `acquireWithCheckpoint with ttl ${label}`, () =>
            b.acquireWithCheckpoint(f.free, 'holder-b', ttl),
          )
        }
        await checkInvalid(c, `renew with ttl ${label}`, () => b.renew(f.held, ttl))
        await checkInvalid(c, `checkpoint with ttl ${label}`, () =>
          b.checkpoint(f.held, bytes('bad ttl'), ttl),
        )
      }
      await checkUntouched(c, f)
    },
  },
  {
    name: 'state that is not a Uint8Array, or too large, is INVALID_ARGUMENT',
    async run(c) {
      const f = await fixture(c)
      const b = c.backend as unknown as Loose
      for (const [label, state] of BAD_STATES) {
        await checkInvalid(c, `checkpoint with ${label}`, () => b.checkpoint(f.held, state, LONG_TTL_MS))
      }
      const oversized = new Uint8Array(c.capabilities.maxStateBytes + 1)
      await checkInvalid(c, 'checkpoint with maxStateBytes + 1 bytes', () =>
        b.checkpoint(f.held, oversized, LONG_TTL_MS),
      )
      await checkUntouched(c, f)
    },
  },
  {
    name: 'malformed and forged-type records are INVALID_ARGUMENT on every operation',
    async run(c) {
      const f = await fixture(c)
      const b = c.backend as unknown as Loose
      for (const [label, record] of badRecords(f.held)) {
        await checkInvalid(c, `renew with ${label}`, () => b.renew(record, LONG_TTL_MS))
        await checkInvalid(c, `checkpoint with ${label}`, () =>
          b.checkpoint(record, bytes('forged'), LONG_TTL_MS),
        )
        await checkInvalid(c, `release with ${label}`, () => b.release(record))
        await checkInvalid(c, `readCheckpoint with ${label}`, () => b.readCheckpoint(record))
      }
      await checkUntouched(c, f)
    },
  },
  {
    name: 'bad options are INVALID_ARGUMENT on every operation',
    async run(c) {
      const f = await fixture(c)
      const b = c.backend as unknown as Loose
      for (const [label, options] of BAD_OPTIONS) {
        await checkInvalid(c, `acquire with options ${label}`, () =>
          b.acquire(f.free, 'holder-b', LONG_TTL_MS, options),
        )
        if (c.capabilities.acquireWithCheckpoint) {
          await checkInvalid(c, `acquireWithCheckpoint with options ${label}`, () =>
            b.acquireWithCheckpoint(f.free, 'holder-b', LONG_TTL_MS, options),
          )
        }
        await checkInvalid(c, `renew with options ${label}`, () => b.renew(f.held, LONG_TTL_MS, options))
        await checkInvalid(c, `checkpoint with options ${label}`, () =>
          b.checkpoint(f.held, bytes('x'), LONG_TTL_MS, options),
        )
        await checkInvalid(c, `release with options ${label}`, () => b.release(f.held, options))
        await checkInvalid(c, `readCheckpoint with options ${label}`, () => b.readCheckpoint(f.held, options))
      }
      await checkUntouched(c, f)
    },
  },
  {
    name: 'a checkpoint sequence that is not a positive safe integer is INVALID_ARGUMENT',
    async run(c) {
      const f = await fixture(c)
      const b = c.backend as unknown as Loose
      const bad: ReadonlyArray<[string, unknown]> = [
        ['0', 0],
        ['-1', -1],
        ['1.5', 1.5],
        ['NaN', Number.NaN],
        ['2^53', 2 ** 53],
        ['a numeric string', '7'],
        ['a bigint', 7n],
        ['null', null],
      ]
      for (const [label, sequence] of bad) {
        await checkInvalid(c, `checkpoint with options.sequence ${label}`, () =>
          b.checkpoint(f.held, bytes('bad sequence'), LONG_TTL_MS, { sequence }),
        )
      }
      await checkUntouched(c, f)
    },
  },
  {
    name: "an already-aborted signal throws the signal's reason before any round trip",
    async run(c) {
      const f = await fixture(c)
      const reason = new Error('caller gave up')
      const controller = new AbortController()
      controller.abort(reason)
      const options = { signal: controller.signal }
      const calls: Array<[string, () => Promise<unknown>]> = [
        ['acquire', () => c.backend.acquire(f.free, 'holder-b', LONG_TTL_MS, options)],
        ['renew', () => c.backend.renew(f.held, LONG_TTL_MS, options)],
        ['checkpoint', () => c.backend.checkpoint(f.held, bytes('aborted'), LONG_TTL_MS, options)],
        ['release', () => c.backend.release(f.held, options)],
        ['readCheckpoint', () => c.backend.readCheckpoint(f.held, options)],
      ]
      if (c.capabilities.acquireWithCheckpoint) {
        const b = c.backend as unknown as Loose
        calls.push([
          'acquireWithCheckpoint',
          () => b.acquireWithCheckpoint(f.free, 'holder-b', LONG_TTL_MS, options),
        ])
      }
      for (const [name, call] of calls) {
        const before = c.roundTrips()
        const error = await rejection(call, `${name} with an aborted signal`)
        check(
          error === reason,
          `${name} with an aborted signal must throw the signal's reason, got ${show(error)}`,
        )
        checkEqual(c.roundTrips(), before, `${name} with an aborted signal: round trips`)
      }
      await checkUntouched(c, f)
    },
  },
  {
    name: 'a live signal is accepted',
    async run(c) {
      const { signal } = new AbortController()
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS, { signal })
      await c.backend.renew(record, LONG_TTL_MS, { signal })
      await c.backend.checkpoint(record, bytes('x'), LONG_TTL_MS, { signal })
      await c.backend.readCheckpoint(record, { signal })
      await c.backend.release(record, { signal })
    },
  },
  {
    name: 'a signal shared by many calls keeps no listener of the backend once they settled',
    async run(c) {
      // The runner hands calls that start close together one signal: a listener left behind by each
      // call would pile up on it (and Node.js warns past ten).
      const { signal } = new AbortController()
      const options = { signal }
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS, options)
      await Promise.all([
        c.backend.renew(record, LONG_TTL_MS, options),
        c.backend.checkpoint(record, bytes('x'), LONG_TTL_MS, options),
        c.backend.readCheckpoint(record, options),
      ])
      if (c.backend.capabilities.renewMany) await c.backend.renewMany!([record], LONG_TTL_MS, options)
      await c.backend.acquire(record.workId, 'holder-b', LONG_TTL_MS, options).catch(() => undefined)
      const withCheckpoint = c.backend.capabilities.acquireWithCheckpoint
      if (withCheckpoint) {
        await c.backend.acquireWithCheckpoint!(c.workId(), 'holder-a', LONG_TTL_MS, options)
        await c.backend.acquireWithCheckpoint!(record.workId, 'holder-b', LONG_TTL_MS, options).catch(
          () => {},
        )
      }
      await c.backend.release(record, options)
      // Failure paths too: a FENCED renew may read once more, and each refusal ends its own way.
      const refused = [
        c.backend.renew(record, LONG_TTL_MS, options),
        c.backend.checkpoint(record, bytes('x'), LONG_TTL_MS, options),
        c.backend.readCheckpoint(record, options),
        c.backend.release(record, options),
        ...(c.backend.capabilities.renewMany ? [c.backend.renewMany!([record], LONG_TTL_MS, options)] : []),
      ]
      await Promise.all(refused.map((call) => call.catch(() => undefined)))
      checkEqual(getEventListeners(signal, 'abort').length, 0, "the signal's abort listeners after the calls")
    },
  },
  {
    name: "a signal that fires while a call is out rejects it with the signal's reason before the event loop turns, or it settles with an outcome it had",
    async run(c) {
      // Callers tell an abort they caused from a store failure by the reason they gave (`fetch` does
      // the same); an error of the client's own would read as a store failure and be retried as one.
      const moments: ReadonlyArray<[string, (() => Promise<void>) | undefined]> = [
        ['as the call returns', undefined],
        ['a microtask later', () => Promise.resolve()],
        ['a macrotask later', () => new Promise((resolve) => setImmediate(resolve))],
        ['1 ms later', () => sleep(1)],
      ]
      for (const [moment, wait] of moments) {
        for (const [name, call] of await abortableCalls(c)) {
          const controller = new AbortController()
          const reason = new Error(`given up ${moment}`)
          let outcome: unknown = WAITING
          const pending = call(controller.signal).then(
            () => (outcome = 'answered'),
            (error: unknown) => (outcome = error),
          )
          if (wait) await wait()
          const waitingAtAbort = outcome === WAITING
          controller.abort(reason)
          // Ticks and microtasks only: no reply can come in before the event loop turns.
          for (let tick = 0; tick < TICKS_BEFORE_IO && outcome === WAITING; tick++) await nextTick()
          check(
            !waitingAtAbort || outcome !== WAITING,
            `${name} aborted ${moment} was still waiting after the signal fired: it must reject with the signal's reason then, not wait for the store's reply`,
          )
          const settled = await pending
          check(
            settled === 'answered' || settled === reason,
            `${name} aborted ${moment} must settle with its outcome or reject with the signal's reason, got ${show(settled)}`,
          )
        }
      }
    },
  },
  {
    name: 'a record that changes between reads is FENCED or INVALID_ARGUMENT and never touches another lease',
    async run(c) {
      const f = await fixture(c)
      const victim = f.held
      // The intruder's own lease on another workId, released so its record is stale.
      const intruder = await c.backend.acquire(c.workId('intruder'), 'holder-x', LONG_TTL_MS)
      await c.backend.release(intruder)
      const calls: ReadonlyArray<[string, (record: LeaseRecord) => Promise<unknown>]> = [
        ['renew', (record) => c.backend.renew(record, LONG_TTL_MS)],
        ['checkpoint', (record) => c.backend.checkpoint(record, bytes('intruder'), LONG_TTL_MS)],
        ['readCheckpoint', (record) => c.backend.readCheckpoint(record)],
        ['release', (record) => c.backend.release(record)],
      ]
      for (const [label, make] of shapeShifters(intruder, victim)) {
        for (const [name, call] of calls) {
          const error = await rejection(() => call(make()), `${name} with ${label}`)
          check(
            isWorkleaseError(error, 'FENCED') || isWorkleaseError(error, 'INVALID_ARGUMENT'),
            `${name} with ${label}: expected FENCED or INVALID_ARGUMENT, got ${show(error)}`,
          )
        }
      }
      await c.backend.renew(victim, LONG_TTL_MS)
      await checkUntouched(c, f)
    },
  },
]
