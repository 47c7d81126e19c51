import { type LeaseRecord, nextCheckpointSequence } from '@worklease/spec'
import { check, checkBytes, checkEqual, checkRejects } from '../assertions.js'
import { type CaseContext, forge, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes, failingSecondRoundTrip, needsFailNextCall, takeWays } from './shared.js'

/** Sends checkpoints one after another, each `[state, sequence]`, then checks which state is stored. */
async function checkpointsLand(
  c: CaseContext,
  record: LeaseRecord,
  checkpoints: readonly (readonly [string, number])[],
  stored: string,
  what: string,
): Promise<void> {
  for (const [state, sequence] of checkpoints) {
    await c.backend.checkpoint(record, bytes(state), LONG_TTL_MS, { sequence })
  }
  checkBytes((await c.backend.readCheckpoint(record)).state, bytes(stored), what)
}

/**
 * On a fresh lease, a checkpoint with sequence 20, then `call`, then one with sequence 10 sent late:
 * the state stored must still be the first one's (`call` left the stored sequence alone).
 */
async function keepsSequence(
  c: CaseContext,
  what: string,
  call: (record: LeaseRecord) => Promise<unknown>,
): Promise<void> {
  const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
  await c.backend.checkpoint(record, bytes('sent second'), LONG_TTL_MS, { sequence: 20 })
  await call(record)
  await c.backend.checkpoint(record, bytes('sent first'), LONG_TTL_MS, { sequence: 10 })
  checkBytes((await c.backend.readCheckpoint(record)).state, bytes('sent second'), `state after ${what}`)
}

export const checkpointCases: CaseDefinition[] = [
  {
    name: 'checkpoint stores state that readCheckpoint returns',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(record, bytes('step 1'), LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('step 1'), 'state after checkpoint')
    },
  },
  {
    name: 'the last checkpoint wins',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(record, bytes('step 1 of a longer run'), LONG_TTL_MS)
      await c.backend.checkpoint(record, bytes('step 2'), LONG_TTL_MS)
      checkBytes(
        (await c.backend.readCheckpoint(record)).state,
        bytes('step 2'),
        'state after two checkpoints',
      )
    },
  },
  {
    name: 'checkpoint extends the lease like renew',
    async run(c) {
      const workId = c.workId()
      const ttl = c.clientClock ? SHORT_TTL_MS : 2_000
      const record = await c.backend.acquire(workId, 'holder-a', ttl)
      await c.elapse(ttl * 0.6)
      await c.backend.checkpoint(record, bytes('x'), ttl)
      await c.elapse(ttl * 0.6)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire after checkpoint',
      )
    },
  },
  {
    name: 'checkpoint of an expired lease that nobody took succeeds and extends it',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      await c.backend.checkpoint(record, bytes('late but unchallenged'), LONG_TTL_MS)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire after the late checkpoint',
      )
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('late but unchallenged'), 'state')
      await c.backend.renew(record, LONG_TTL_MS)
    },
  },
  {
    name: 'checkpoint after a takeover is FENCED and changes neither the state nor the expiry',
    async run(c) {
      const workId = c.workId()
      const old = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(old, bytes('before'), SHORT_TTL_MS)
      await c.expire()
      const successor = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      // A 1 ms ttl: had the refused checkpoint touched the expiry, the successor's lease would end.
      await checkRejects(
        () => c.backend.checkpoint(old, bytes('stale write'), 1),
        'FENCED',
        'stale checkpoint',
      )
      checkBytes(
        (await c.backend.readCheckpoint(successor)).state,
        bytes('before'),
        'state seen by the successor',
      )
      await c.expire()
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-c', LONG_TTL_MS),
        'LEASE_HELD',
        "the successor's lease after a refused checkpoint",
      )
    },
  },
  {
    name: 'checkpoint after release is FENCED and changes nothing',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(record, bytes('final'), LONG_TTL_MS)
      await c.backend.release(record)
      await checkRejects(
        () => c.backend.checkpoint(record, bytes('after release'), LONG_TTL_MS),
        'FENCED',
        'checkpoint after release',
      )
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      const read = await c.backend.readCheckpoint(next)
      checkBytes(read.state, bytes('final'), 'state seen by the successor')
      checkEqual(read.cleanHandoff, true, 'cleanHandoff after a release')
    },
  },
  {
    name: 'checkpoint with a forged token or holderId is FENCED and changes nothing',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(record, bytes('real'), LONG_TTL_MS)
      await checkRejects(
        () =>
          c.backend.checkpoint(
            forge(record, { fencingToken: record.fencingToken + 1n }),
            bytes('forged'),
            LONG_TTL_MS,
          ),
        'FENCED',
        'forged token',
      )
      await checkRejects(
        () => c.backend.checkpoint(forge(record, { holderId: 'intruder' }), bytes('forged'), LONG_TTL_MS),
        'FENCED',
        'forged holderId',
      )
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('real'), 'state')
    },
  },
  {
    name: 'checkpoint takes the state at call time: reusing the array before the call settles changes nothing',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      // Several checkpoints at once keep some of them waiting (a pool, a queue) after the buffer changes.
      const states = Array.from({ length: 4 }, (_, i) =>
        i % 2 ? Buffer.from(`checkpoint ${i}`) : bytes(`checkpoint ${i}`),
      )
      const pending = Promise.all(
        states.map((state) => c.backend.checkpoint(record, state, LONG_TTL_MS).then(() => 'ok' as const)),
      )
      for (const state of states) state.fill(0x58)
      await pending
      const stored = (await c.backend.readCheckpoint(record)).state
      const text = stored ? new TextDecoder().decode(stored) : String(stored)
      check(
        states.some((_, i) => text === `checkpoint ${i}`),
        `the stored state must be one of the states passed in, got ${JSON.stringify(text)}`,
      )
    },
  },
  {
    name: 'checkpoint stores a copy: changing the array (or Buffer) afterwards changes nothing stored',
    async run(c) {
      for (const make of [bytes, (text: string) => Buffer.from(text)]) {
        const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
        const state = make('original')
        await c.backend.checkpoint(record, state, LONG_TTL_MS)
        state.fill(0)
        const read = await c.backend.readCheckpoint(record)
        checkBytes(
          read.state,
          bytes('original'),
          `state after the caller reused its ${state.constructor.name}`,
        )
        read.state?.fill(1)
        checkBytes(
          (await c.backend.readCheckpoint(record)).state,
          bytes('original'),
          'state after the reader changed its copy',
        )
      }
    },
  },
  {
    name: 'checkpoint never shortens a live lease: a shorter ttl keeps the later expiry',
    async run(c) {
      const workId = c.workId()
      const ttl = c.clientClock ? 1_000 : 3_000
      const record = await c.backend.acquire(workId, 'holder-a', ttl)
      await c.backend.checkpoint(record, bytes('short'), SHORT_TTL_MS)
      await c.expire()
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire after a shorter checkpoint, before the first expiry',
      )
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('short'), 'state')
    },
  },
  {
    name: 'a checkpoint sent earlier never replaces one sent later (lower sequence lands second)',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      const landed = [
        ['sent second', 20],
        ['sent first, landed late', 10],
      ] as const
      await checkpointsLand(c, record, landed, 'sent second', 'state')
      await checkpointsLand(c, record, [['third', 21]], 'third', 'state after a later one')
    },
  },
  {
    name: 'a retried checkpoint (same sequence) succeeds, keeps the first state and still extends',
    async run(c) {
      const workId = c.workId()
      const ttl = c.clientClock ? 1_000 : 2_000
      const record = await c.backend.acquire(workId, 'holder-a', ttl)
      await c.backend.checkpoint(record, bytes('first attempt'), ttl, { sequence: 7 })
      await c.elapse(ttl * 0.6)
      await c.backend.checkpoint(record, bytes('retry'), ttl, { sequence: 7 })
      await c.elapse(ttl * 0.6)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire after the retry extended the lease',
      )
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('first attempt'), 'state')
    },
  },
  {
    // Found by a review (session 49): store failures were only ever injected on a first round trip.
    name: "a failure of the store on a retried checkpoint's extending write is passed on, never FENCED",
    unsupported: needsFailNextCall,
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(record, bytes('first attempt'), LONG_TTL_MS, { sequence: 7 })
      // A shorter ttl too: where the store has no max(), extending may take a write of its own.
      await failingSecondRoundTrip(
        c,
        'a checkpoint retried with its sequence',
        () => c.backend.checkpoint(record, bytes('retry'), SHORT_TTL_MS, { sequence: 7 }),
        () => c.backend.readCheckpoint(record),
      )
      await c.backend.renew(record, LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('first attempt'), 'state')
    },
  },
  {
    name: 'a checkpoint with a lower sequence keeps the later state but still extends the lease',
    async run(c) {
      const workId = c.workId()
      const ttl = c.clientClock ? 1_000 : 2_000
      const record = await c.backend.acquire(workId, 'holder-a', ttl)
      await c.backend.checkpoint(record, bytes('sent second'), ttl, { sequence: 20 })
      await c.elapse(ttl * 0.6)
      await c.backend.checkpoint(record, bytes('sent first, landed late'), ttl, { sequence: 10 })
      await c.elapse(ttl * 0.6)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire after a lower-sequence checkpoint extended the lease',
      )
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('sent second'), 'state')
    },
  },
  {
    name: 'every lease starts with no sequence: after a release, an expiry or a revoke, by acquire or acquireWithCheckpoint, taken by another holder or the same',
    async run(c) {
      // A takeover written apart from the release path (an expired lease, a revoked one, the statement
      // of acquireWithCheckpoint) must reset the sequence too, or the successor's checkpoints are
      // acknowledged and silently not stored.
      const ends: Array<[string, (record: LeaseRecord) => Promise<unknown>]> = [
        ['a release', (record) => c.backend.release(record)],
        ['an expiry', () => c.expire()],
      ]
      if (c.capabilities.revoke) ends.push(['a revoke', (record) => c.backend.revoke!(record.workId)])
      // The same holder too: a driver resetting the sequence only when the holderId changes keeps it.
      for (const [end, endLease] of ends) {
        for (const [take, takeLease] of takeWays(c)) {
          for (const successor of ['holder-b', 'holder-a']) {
            const workId = c.workId()
            const ttl = end === 'an expiry' ? SHORT_TTL_MS : LONG_TTL_MS
            const first = await c.backend.acquire(workId, 'holder-a', ttl)
            await c.backend.checkpoint(first, bytes('big sequence'), ttl, {
              sequence: Number.MAX_SAFE_INTEGER,
            })
            await endLease(first)
            const second = await takeLease(c.backend, workId, successor, LONG_TTL_MS)
            await c.backend.checkpoint(second, bytes('successor'), LONG_TTL_MS, { sequence: 1 })
            checkBytes(
              (await c.backend.readCheckpoint(second)).state,
              bytes('successor'),
              `state after ${end} and ${take} by ${successor}`,
            )
          }
        }
      }
    },
  },
  {
    name: 'a stale checkpoint of a record no longer valid is FENCED whatever its sequence',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(record, bytes('kept'), LONG_TTL_MS, { sequence: 10 })
      await c.backend.release(record)
      for (const sequence of [5, 10, 11]) {
        await checkRejects(
          () => c.backend.checkpoint(record, bytes('stale'), LONG_TTL_MS, { sequence }),
          'FENCED',
          `checkpoint after release with sequence ${sequence}`,
        )
      }
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(next)).state, bytes('kept'), 'state')
      if (!c.capabilities.revoke) return
      // Revoked: the token stays, the holderId is blanked. A stale sequence's write that only extends
      // the lease must check the holderId too, or it revives the revoked lease for a ttl.
      const revokedId = c.workId('revoked')
      const revoked = await c.backend.acquire(revokedId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(revoked, bytes('kept'), LONG_TTL_MS, { sequence: 10 })
      checkEqual(await c.backend.revoke!(revokedId), true, 'revoke of the live lease')
      for (const sequence of [5, 10, 11]) {
        await checkRejects(
          () => c.backend.checkpoint(revoked, bytes('stale'), LONG_TTL_MS, { sequence }),
          'FENCED',
          `checkpoint after revoke with sequence ${sequence}`,
        )
      }
      const successor = await c.backend.acquire(revokedId, 'holder-b', LONG_TTL_MS)
      checkEqual(successor.fencingToken, 2n, 'token of the successor, at once after the revoke')
    },
  },
  {
    // A driver validating one read of the sequence and storing another stores what it never checked:
    // a sequence answering 5 to the check and 1 to the write lets a later sequence 3 roll state back.
    name: 'checkpoint reads options.sequence once: one answering a lower number later is stored as checked',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      let reads = 0
      const options = {}
      Object.defineProperty(options, 'sequence', { enumerable: true, get: () => (++reads === 1 ? 5 : 1) })
      await c.backend.checkpoint(record, bytes('step 5'), LONG_TTL_MS, options)
      await c.backend.checkpoint(record, bytes('step 3, late'), LONG_TTL_MS, { sequence: 3 })
      checkBytes(
        (await c.backend.readCheckpoint(record)).state,
        bytes('step 5'),
        'state after a late sequence 3',
      )
    },
  },
  {
    name: 'checkpoints without a sequence keep their call order',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      for (let i = 0; i < 5; i++) await c.backend.checkpoint(record, bytes(`step ${i}`), LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('step 4'), 'state')
    },
  },
  {
    // A driver that draws the default after an await (an async validation, a connection checkout)
    // numbers a checkpoint by when it reached the store, not by when it was called: the earlier call
    // then replaces a later one that passed its own sequence.
    name: 'a checkpoint without a sequence draws it when the call is made, not later',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      const first = c.backend.checkpoint(record, bytes('called first'), LONG_TTL_MS)
      // The clock moves on before the draw below: a driver that draws from its own copy of
      // nextCheckpointSequence (seeded from the wall clock) at call time still drew a smaller one.
      const until = Date.now() + 3
      while (Date.now() < until) {}
      const sequence = nextCheckpointSequence()
      // One after the other: what is judged is the order of the sequences, not a race of two writes
      // (which a store without atomic conditional writes, FerretDB 1.x, may lose either way).
      await first
      await c.backend.checkpoint(record, bytes('called second'), LONG_TTL_MS, { sequence })
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('called second'), 'state')
    },
  },
  {
    name: 'checkpoint sequences compare as numbers: 9, then 10, then a late 2, then 100',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      const first = [
        ['nine', 9],
        ['ten', 10],
      ] as const
      await checkpointsLand(c, record, first, 'ten', 'state after 9, then 10')
      await checkpointsLand(c, record, [['two, late', 2]], 'ten', 'state after a late 2')
      await checkpointsLand(c, record, [['hundred', 100]], 'hundred', 'state after 100')
    },
  },
  {
    name: 'two late checkpoints in a row never replace the latest: a refused one leaves the stored sequence',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      const landed = [
        ['sent third', 30],
        ['sent first', 10],
        ['sent second', 20],
      ] as const
      await checkpointsLand(c, record, landed, 'sent third', 'state')
    },
  },
  {
    name: 'renew and renewMany keep the stored sequence: a late checkpoint after them is still refused',
    async run(c) {
      await keepsSequence(c, 'renew', (record) => c.backend.renew(record, LONG_TTL_MS))
      if (c.capabilities.renewMany) {
        await keepsSequence(c, 'renewMany', (record) => c.backend.renewMany!([record], LONG_TTL_MS))
      }
    },
  },
  {
    // Found by mutating the memory backend (session 35): a refused or read-only call that reset the
    // stored sequence passed every case, and a checkpoint sent earlier then replaced a later one.
    name: 'no refused or read-only call touches the stored sequence: a late checkpoint after one is still refused',
    async run(c) {
      const disturbances: [string, (record: LeaseRecord) => Promise<unknown>][] = [
        ['a refused acquire', (record) => c.backend.acquire(record.workId, 'holder-b', LONG_TTL_MS)],
        ['a stale renew', (record) => c.backend.renew(stale(record), LONG_TTL_MS)],
        ['a stale checkpoint', (record) => c.backend.checkpoint(stale(record), bytes('stale'), LONG_TTL_MS)],
        ['a stale release', (record) => c.backend.release(stale(record))],
        ['a stale readCheckpoint', (record) => c.backend.readCheckpoint(stale(record))],
      ]
      if (c.capabilities.renewMany) {
        disturbances.push([
          'a renewMany refusing the record',
          (r) => c.backend.renewMany!([stale(r)], LONG_TTL_MS),
        ])
      }
      if (c.capabilities.list)
        disturbances.push(['a list', (record) => c.backend.list!({ prefix: record.workId })])
      if (c.capabilities.revoke) {
        disturbances.push([
          'a revoke naming another token',
          (record) => c.backend.revoke!(record.workId, { fencingToken: record.fencingToken + 1n }),
        ])
      }
      for (const [what, disturb] of disturbances) {
        await keepsSequence(c, what, (record) => disturb(record).catch(() => undefined))
      }
    },
  },
  {
    name: 'a renew refused as LEASE_EXPIRED changes nothing: the holder can still checkpoint, its successor reads a crash',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      await checkRejects(() => c.backend.renew(record, LONG_TTL_MS), 'LEASE_EXPIRED', 'renew after expiry')
      // Expired but not taken: the contract lets the holder's checkpoint land and extend it.
      await c.backend.checkpoint(record, bytes('late but valid'), SHORT_TTL_MS)
      await c.expire()
      const successor = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      const read = await c.backend.readCheckpoint(successor)
      checkEqual(read.cleanHandoff, false, "the successor's cleanHandoff after the holder's lease expired")
      checkBytes(read.state, bytes('late but valid'), "the successor's state")
    },
  },
  {
    name: 'a late checkpoint to an expired lease nobody took succeeds and extends it, keeping the later state',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(record, bytes('sent second'), SHORT_TTL_MS, { sequence: 20 })
      await c.expire()
      await c.backend.checkpoint(record, bytes('sent first'), LONG_TTL_MS, { sequence: 10 })
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'acquire after the late checkpoint extended the lease',
      )
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('sent second'), 'state')
    },
  },
]

/** The record with a token this lease never had: every call with it is refused as FENCED. */
function stale(record: LeaseRecord): LeaseRecord {
  return forge(record, { fencingToken: record.fencingToken + 1n })
}
