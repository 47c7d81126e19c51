import { checkBytes, checkEqual, checkRejects } from '../assertions.js'
import { forge, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes } from './shared.js'

export const isolationCases: CaseDefinition[] = [
  {
    name: 'holding one workId does not block another',
    async run(c) {
      await c.backend.acquire(c.workId('a'), 'holder-a', LONG_TTL_MS)
      const other = await c.backend.acquire(c.workId('b'), 'holder-b', LONG_TTL_MS)
      checkEqual(other.fencingToken, 1n, 'token of the other workId')
    },
  },
  {
    name: "one workId's checkpoint, release and expiry do not touch another",
    async run(c) {
      const a = await c.backend.acquire(c.workId('a'), 'holder-a', LONG_TTL_MS)
      const b = await c.backend.acquire(c.workId('b'), 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(a, bytes('a state'), LONG_TTL_MS)
      checkBytes((await c.backend.readCheckpoint(b)).state, null, "b's state")
      await c.backend.release(a)
      await checkRejects(
        () => c.backend.acquire(b.workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'b after releasing a',
      )
      await c.expire()
      await c.backend.acquire(b.workId, 'holder-b', LONG_TTL_MS)
      const a2 = await c.backend.acquire(a.workId, 'holder-b', LONG_TTL_MS)
      checkEqual(
        (await c.backend.readCheckpoint(a2)).cleanHandoff,
        true,
        "a's handoff is unaffected by b's expiry",
      )
    },
  },
  {
    name: "a record cannot act on another workId's lease with the same token",
    async run(c) {
      const a = await c.backend.acquire(c.workId('a'), 'holder-a', LONG_TTL_MS)
      const b = await c.backend.acquire(c.workId('b'), 'holder-b', LONG_TTL_MS)
      const crossed = forge(a, { workId: b.workId })
      await checkRejects(
        () => c.backend.checkpoint(crossed, bytes('crossed'), LONG_TTL_MS),
        'FENCED',
        'crossed checkpoint',
      )
      await checkRejects(() => c.backend.release(crossed), 'FENCED', 'crossed release')
      checkBytes((await c.backend.readCheckpoint(b)).state, null, "b's state")
    },
  },
]
