import { checkBytes, checkEqual, checkRejects } from '../assertions.js'
import { forge, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes } from './shared.js'

export const readCheckpointCases: CaseDefinition[] = [
  {
    name: 'the first lease of a workId reads null state and a clean handoff',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      const read = await c.backend.readCheckpoint(record)
      checkBytes(read.state, null, 'state')
      checkEqual(read.cleanHandoff, true, 'cleanHandoff')
    },
  },
  {
    name: 'an expired lease that nobody took can still read',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', SHORT_TTL_MS)
      await c.backend.checkpoint(record, bytes('kept'), SHORT_TTL_MS)
      await c.expire()
      checkBytes((await c.backend.readCheckpoint(record)).state, bytes('kept'), 'state')
    },
  },
  {
    name: 'readCheckpoint after a takeover is FENCED',
    async run(c) {
      const workId = c.workId()
      const old = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      await checkRejects(() => c.backend.readCheckpoint(old), 'FENCED', 'read by the old holder')
    },
  },
  {
    name: 'readCheckpoint with a forged holderId is FENCED',
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', LONG_TTL_MS)
      await checkRejects(
        () => c.backend.readCheckpoint(forge(record, { holderId: 'intruder' })),
        'FENCED',
        'forged holderId',
      )
    },
  },
  {
    name: 'readCheckpoint does not extend the lease',
    async run(c) {
      const workId = c.workId()
      const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.elapse(SHORT_TTL_MS / 2)
      await c.backend.readCheckpoint(record)
      await c.expire(SHORT_TTL_MS / 2)
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'successor token')
    },
  },
]
