import type { Backend, BackendCapabilities, LeaseRecord } from '@worklease/spec'
import { isWorkleaseError } from '@worklease/spec'
import { check, checkBytes, checkEqual, outcome, show } from '../assertions.js'
import { type CaseContext, LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes } from './shared.js'

const ACQUIRERS = 50
const PROCESSES = 5
const ROUNDS = 8

function needsAtomicity(caps: BackendCapabilities): string | undefined {
  if (caps.crossConnectionAtomic) return undefined
  return `backend declares crossConnectionAtomic: false${caps.crossConnectionAtomicNote ? ` (${caps.crossConnectionAtomicNote})` : ''}`
}

async function processes(c: CaseContext, count: number): Promise<Backend[]> {
  const opened = [c.backend]
  while (opened.length < count) opened.push(await c.open())
  return opened
}

/** Every acquirer at once, spread over several processes; returns the winners' records. */
async function stampede(c: CaseContext, workId: string, ttlMs: number): Promise<LeaseRecord[]> {
  const backends = await processes(c, PROCESSES)
  const results = await Promise.allSettled(
    Array.from({ length: ACQUIRERS }, (_, i) =>
      backends[i % backends.length]!.acquire(workId, `racer-${i}`, ttlMs),
    ),
  )
  const winners: LeaseRecord[] = []
  for (const result of results) {
    if (result.status === 'fulfilled') winners.push(result.value)
    else
      check(
        isWorkleaseError(result.reason, 'LEASE_HELD'),
        `a losing acquirer must get LEASE_HELD, got ${show(result.reason)}`,
      )
  }
  return winners
}

export const raceCases: CaseDefinition[] = [
  {
    name: `${ACQUIRERS} concurrent acquirers of a new workId: exactly one wins`,
    unsupported: needsAtomicity,
    timeoutMs: 30_000,
    async run(c) {
      const winners = await stampede(c, c.workId(), LONG_TTL_MS)
      checkEqual(winners.length, 1, 'winners')
      checkEqual(winners[0]!.fencingToken, 1n, 'winner token')
    },
  },
  {
    name: `${ACQUIRERS} concurrent acquirers of an expired lease: exactly one wins, with the next token`,
    unsupported: needsAtomicity,
    timeoutMs: 30_000,
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      const winners = await stampede(c, workId, LONG_TTL_MS)
      checkEqual(winners.length, 1, 'winners')
      checkEqual(winners[0]!.fencingToken, 2n, 'winner token')
    },
  },
  {
    name: `${ACQUIRERS} concurrent acquirers of a released lease: exactly one wins`,
    unsupported: needsAtomicity,
    timeoutMs: 30_000,
    async run(c) {
      const workId = c.workId()
      await c.backend.release(await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS))
      const winners = await stampede(c, workId, LONG_TTL_MS)
      checkEqual(winners.length, 1, 'winners')
      checkEqual(winners[0]!.fencingToken, 2n, 'winner token')
    },
  },
  {
    name: 'checkpoint racing a takeover lands entirely before it or is FENCED',
    unsupported: needsAtomicity,
    timeoutMs: 30_000,
    async run(c) {
      const [, other] = await processes(c, 2)
      for (let round = 0; round < ROUNDS; round++) {
        const workId = c.workId(`round${round}`)
        const old = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
        await c.backend.checkpoint(old, bytes('before'), SHORT_TTL_MS)
        await c.expire()
        const [checkpointed, takeover] = await Promise.all([
          outcome(() => c.backend.checkpoint(old, bytes('racing'), SHORT_TTL_MS)),
          other!.acquire(workId, 'holder-b', LONG_TTL_MS).then(
            (record) => record,
            (error: unknown) => error,
          ),
        ])
        if (isWorkleaseError(takeover, 'LEASE_HELD')) {
          // The checkpoint extended the lease first, so the takeover had to fail.
          checkEqual(checkpointed, 'ok', `round ${round}: checkpoint outcome when the takeover lost`)
          continue
        }
        check(!(takeover instanceof Error), `round ${round}: takeover failed with ${show(takeover)}`)
        const successor = takeover as LeaseRecord
        check(
          checkpointed === 'ok' || checkpointed === 'FENCED',
          `round ${round}: checkpoint outcome ${checkpointed}`,
        )
        const seen = (await other!.readCheckpoint(successor)).state
        checkBytes(
          seen,
          bytes(checkpointed === 'ok' ? 'racing' : 'before'),
          `round ${round}: state seen by the successor`,
        )
      }
    },
  },
  {
    name: 'release racing a takeover lands entirely before it or is FENCED',
    unsupported: needsAtomicity,
    timeoutMs: 30_000,
    async run(c) {
      const [, other] = await processes(c, 2)
      for (let round = 0; round < ROUNDS; round++) {
        const workId = c.workId(`round${round}`)
        const old = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
        await c.expire()
        const [released, successor] = await Promise.all([
          outcome(() => c.backend.release(old)),
          other!.acquire(workId, 'holder-b', LONG_TTL_MS),
        ])
        check(released === 'ok' || released === 'FENCED', `round ${round}: release outcome ${released}`)
        checkEqual(successor.fencingToken, 2n, `round ${round}: successor token`)
        const { cleanHandoff } = await other!.readCheckpoint(successor)
        checkEqual(
          cleanHandoff,
          released === 'ok',
          `round ${round}: cleanHandoff given the release outcome ${released}`,
        )
      }
    },
  },
  {
    name: 'concurrent renewals and checkpoints by the holder all succeed and keep the token',
    unsupported: needsAtomicity,
    async run(c) {
      const workId = c.workId()
      const [, other] = await processes(c, 2)
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          i % 2
            ? other!.renew(record, LONG_TTL_MS)
            : c.backend.checkpoint(record, bytes(`c${i}`), LONG_TTL_MS),
        ),
      )
      await c.backend.release(record)
      checkEqual((await other!.acquire(workId, 'holder-b', LONG_TTL_MS)).fencingToken, 2n, 'next token')
    },
  },
]
