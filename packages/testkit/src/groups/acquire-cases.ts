import { isWorkleaseError } from '@worklease/spec'
import { check, checkEqual, checkRejects } from '../assertions.js'
import { LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { checkRecord } from './shared.js'

export const acquireCases: CaseDefinition[] = [
  {
    name: 'a new workId gets token 1 and expires at now + ttl',
    async run(c) {
      const workId = c.workId()
      const startedAt = Date.now()
      const record = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      checkRecord(c, record, {
        workId,
        holderId: 'holder-a',
        fencingToken: 1n,
        ttlMs: LONG_TTL_MS,
        startedAt,
      })
    },
  },
  {
    name: 'a held lease refuses another holder with LEASE_HELD',
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'second acquire',
      )
    },
  },
  {
    name: 'leases are not reentrant: the same holderId gets LEASE_HELD too',
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-a', LONG_TTL_MS),
        'LEASE_HELD',
        'reentrant acquire',
      )
    },
  },
  {
    name: 'LEASE_HELD is an Error with a stable code that the guards recognise',
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      let caught: unknown
      try {
        await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      } catch (error) {
        caught = error
      }
      check(caught instanceof Error, 'LEASE_HELD must be an Error')
      checkEqual((caught as { code?: unknown }).code, 'LEASE_HELD', 'error.code')
      check(isWorkleaseError(caught, 'LEASE_HELD'), 'isWorkleaseError(error, LEASE_HELD)')
    },
  },
  {
    name: 'a failed acquire changes nothing: the holder keeps its lease and token',
    async run(c) {
      const workId = c.workId()
      const held = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'second acquire',
      )
      await c.backend.renew(held, LONG_TTL_MS)
      await c.backend.release(held)
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'token after one failed and one successful takeover')
    },
  },
  {
    name: 'an expired lease can be taken by anyone, with the next token',
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      const startedAt = Date.now()
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkRecord(c, next, { workId, holderId: 'holder-b', fencingToken: 2n, ttlMs: LONG_TTL_MS, startedAt })
    },
  },
  {
    name: 'the same holder can take its own expired lease again, as a new lease',
    async run(c) {
      const workId = c.workId()
      const first = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await c.expire()
      const second = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      checkEqual(second.fencingToken, 2n, 'token of the second lease')
      await checkRejects(() => c.backend.renew(first, LONG_TTL_MS), 'FENCED', 'renew with the first record')
    },
  },
  {
    name: 'a released lease can be taken at once, with the next token',
    async run(c) {
      const workId = c.workId()
      const first = await c.backend.acquire(workId, 'holder-a', LONG_TTL_MS)
      await c.backend.release(first)
      const next = await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
      checkEqual(next.fencingToken, 2n, 'token after release')
    },
  },
  {
    name: 'the smallest and largest ttl are accepted',
    async run(c) {
      const tiny = await c.backend.acquire(c.workId(), 'holder-a', 1)
      checkEqual(tiny.fencingToken, 1n, 'token with ttl 1')
      const huge = await c.backend.acquire(c.workId(), 'holder-a', 2_147_483_647)
      checkEqual(huge.fencingToken, 1n, 'token with the largest ttl')
      check(huge.expiresAt.getTime() > Date.now() + 24 * 86_400_000, 'largest ttl expires in about 24.8 days')
    },
  },
]
