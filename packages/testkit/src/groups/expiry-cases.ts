import type { LeaseRecord } from '@worklease/spec'
import { checkEqual, checkRejects } from '../assertions.js'
import { LONG_TTL_MS, SHORT_TTL_MS } from '../case-context.js'
import type { CaseDefinition } from '../suite-case.js'
import { bytes } from './shared.js'

const needsClientClock = (caps: { clock: string }) =>
  caps.clock === 'server' ? 'expiry runs on the server clock; a real short ttl covers it' : undefined
const needsServerClock = (caps: { clock: string }) =>
  caps.clock === 'client'
    ? 'expiry runs on the injected client clock; the boundary cases cover it'
    : undefined

export const expiryCases: CaseDefinition[] = [
  {
    name: 'a lease is held 1 ms before expiresAt and free at expiresAt',
    unsupported: needsClientClock,
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', 1_000)
      await c.elapse(999)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        '1 ms before expiry',
      )
      await c.elapse(1)
      checkEqual(
        (await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)).fencingToken,
        2n,
        'token at expiry',
      )
    },
  },
  {
    name: 'renew exactly at expiresAt is LEASE_EXPIRED',
    unsupported: needsClientClock,
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', 1_000)
      await c.elapse(1_000)
      await checkRejects(() => c.backend.renew(record, 1_000), 'LEASE_EXPIRED', 'renew at expiry')
    },
  },
  {
    name: 'a lease with a short real ttl is held, then free once the server clock passes it',
    unsupported: needsServerClock,
    async run(c) {
      const workId = c.workId()
      await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
      await checkRejects(
        () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
        'LEASE_HELD',
        'before expiry',
      )
      await c.expire()
      checkEqual(
        (await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)).fencingToken,
        2n,
        'token after expiry',
      )
    },
  },
  {
    name: 'renew with a short real ttl after expiry is LEASE_EXPIRED',
    unsupported: needsServerClock,
    async run(c) {
      const record = await c.backend.acquire(c.workId(), 'holder-a', 1)
      await c.expire(1)
      await checkRejects(() => c.backend.renew(record, 1_000), 'LEASE_EXPIRED', 'renew after a 1 ms ttl')
    },
  },
  {
    name: "a shorter ttl keeps a stored expiry later than the record's: renew, renewMany, checkpoint, late checkpoint",
    timeoutMs: 30_000,
    async run(c) {
      // The record says acquire + SHORT; a checkpoint moved the stored expiry to + LONGER. Judging the
      // max rule by the record's expiry would shorten the lease back to about + SHORT.
      const longer = 1_000
      const renewals: [string, (record: LeaseRecord) => Promise<unknown>][] = [
        ['renew', (record) => c.backend.renew(record, SHORT_TTL_MS)],
        ['checkpoint', (record) => c.backend.checkpoint(record, bytes('x'), SHORT_TTL_MS, { sequence: 99 })],
        [
          'late checkpoint',
          (record) => c.backend.checkpoint(record, bytes('x'), SHORT_TTL_MS, { sequence: 1 }),
        ],
      ]
      if (c.capabilities.renewMany) {
        renewals.push(['renewMany', (record) => c.backend.renewMany!([record], SHORT_TTL_MS)])
      }
      // One workId per renewal, all on the same timeline, so a server clock waits out the ttls once.
      const leases = []
      for (const [name, renewal] of renewals) {
        const workId = c.workId()
        const record = await c.backend.acquire(workId, 'holder-a', SHORT_TTL_MS)
        await c.backend.checkpoint(record, bytes('s'), longer, { sequence: 50 })
        await renewal(record)
        leases.push({ name, workId })
      }
      await c.elapse(SHORT_TTL_MS + 1)
      for (const { name, workId } of leases) {
        await checkRejects(
          () => c.backend.acquire(workId, 'holder-b', LONG_TTL_MS),
          'LEASE_HELD',
          `${name} with a shorter ttl, past the record's expiry`,
        )
      }
      await c.expire(longer)
      for (const { workId } of leases) await c.backend.acquire(workId, 'holder-b', LONG_TTL_MS)
    },
  },
]
