import { isWorkleaseError } from '@worklease/spec'
import { check, checkBytes, checkEqual, show } from '../assertions.js'
import { LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes } from './shared.js'

export const handoffCases: CaseDefinition[] = [
  {
    name: 'after release the successor reads the state and a clean handoff',
    async run(c) {
      const workId = c.workId()
      const first = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(first, bytes('done up to 7'), LONG_TTL_MS)
      await c.backend.release(first)
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      const read = await c.backend.readCheckpoint(next)
      checkBytes(read.state, bytes('done up to 7'), 'state')
      checkEqual(read.cleanHandoff, true, 'cleanHandoff')
    },
  },
  {
    name: 'after a crash (expiry) the successor reads the state and an unclean handoff',
    async run(c) {
      const workId = c.workId()
      const first = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(first, bytes('done up to 3'), SHORT_TTL_MS)
      await c.expire()
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      const read = await c.backend.readCheckpoint(next)
      checkBytes(read.state, bytes('done up to 3'), 'state')
      checkEqual(read.cleanHandoff, false, 'cleanHandoff')
    },
  },
  {
    name: 'cleanHandoff describes only the previous lease: crash, then release, then crash',
    async run(c) {
      const workId = c.workId()
      const a = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      const b = await c.backend.acquire(workId, 'holder-b', SHORT_TTL_MS)
      checkEqual((await c.backend.readCheckpoint(b)).cleanHandoff, false, 'after a crash')
      await c.backend.release(b)
      const d = await c.backend.acquire(workId, 'holder-c', SHORT_TTL_MS)
      checkEqual((await c.backend.readCheckpoint(d)).cleanHandoff, true, 'after a release')
      await c.expire()
      const e = await c.backend.acquire(workId, 'holder-d', LONG_TTL_MS)
      checkEqual((await c.backend.readCheckpoint(e)).cleanHandoff, false, 'after another crash')
      checkEqual(e.fencingToken, a.fencingToken + 3n, 'token after three takeovers')
    },
  },
  {
    // Found by mutating the memory backend (session 35): only the random model caught a refused
    // acquire that rewrote the holder's cleanHandoff.
    name: "a refused acquire leaves the holder's cleanHandoff as it was, clean or not",
    async run(c) {
      for (const previous of ['released', 'crashed'] as const) {
        const workId = c.workId()
        const first = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
        if (previous === 'released') await c.backend.release(first)
        else await c.expire()
        const holder = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
        await c.backend.acquire(workId, 'holder-c', LONG_TTL_MS).catch(() => undefined)
        checkEqual(
          (await c.backend.readCheckpoint(holder)).cleanHandoff,
          previous === 'released',
          `the holder's cleanHandoff after a refused acquire (previous lease ${previous})`,
        )
      }
    },
  },
  {
    name: 'state survives holders that never checkpoint',
    async run(c) {
      const workId = c.workId()
      const a = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.checkpoint(a, bytes('from a'), LONG_TTL_MS)
      await c.backend.release(a)
      const b = await c.backend.acquire(workId, 'holder-b', SHORT_TTL_MS)
      await c.expire()
      const d = await c.backend.acquire(workId, 'holder-c', LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(d)).state, bytes('from a'), 'state two holders later')
      checkEqual(d.fencingToken, b.fencingToken + 1n, 'token')
    },
  },
  {
    name: 'a crashed holder that comes back finds itself fenced and its successor intact',
    async run(c) {
      const workId = c.workId()
      const a = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(a, bytes('a1'), SHORT_TTL_MS)
      await c.expire()
      const b = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      await c.backend.checkpoint(b, bytes('b1'), LONG_TTL_MS)
      const late = await Promise.allSettled([
        c.backend.checkpoint(a, bytes('a2'), LONG_TTL_MS),
        c.backend.renew(a, LONG_TTL_MS),
        c.backend.release(a),
      ])
      for (const result of late) {
        check(
          result.status === 'rejected' && isWorkleaseError(result.reason, 'FENCED'),
          `a late call by the crashed holder must be FENCED, got ${result.status === 'rejected' ? show(result.reason) : 'success'}`,
        )
      }
      checkBytes((await c.backend.readCheckpoint(b)).state, bytes('b1'), 'successor state')
    },
  },
  {
    name: 'a holder that takes its own expired lease again reads an unclean handoff, as a successor would',
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      const again = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      checkEqual(
        (await c.backend.readCheckpoint(again)).cleanHandoff,
        false,
        'cleanHandoff after its own crash',
      )
      if (!c.backend.acquireWithCheckpoint) return
      const other = c.workId()
      await c.backend.acquire(other, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      const taken = await c.backend.acquireWithCheckpoint(other, 'holder-a', LONG_TTL_MS)
      checkEqual(
        taken.checkpoint.cleanHandoff,
        false,
        'acquireWithCheckpoint: cleanHandoff after its own crash',
      )
    },
  },
]
