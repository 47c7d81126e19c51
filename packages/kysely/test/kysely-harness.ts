import type { BackendFactory, BackendHarness } from '@worklease/testkit'
import type { Kysely } from 'kysely'
import { createLeaseTable, dropLeaseTable, KyselyBackend, type KyselyBackendOptions } from '../src/index.js'
import type { Target, TargetStorage } from './targets.js'

export interface KyselyHarness extends BackendHarness {
  readonly storage: TargetStorage
  open(): KyselyBackend
  roundTrips(): number
}

/**
 * A harness over a fresh table (random name) on `target`. Every `open` is a separate process with its
 * own Kysely and pool (except on `:memory:`); statements are counted through each Kysely's `log` hook,
 * which fires once per statement sent, errors included. `close` drops the table and ends the pools.
 */
export async function kyselyHarness(
  target: Target,
  options: Omit<KyselyBackendOptions, 'db' | 'table'> = {},
): Promise<KyselyHarness> {
  const storage = await target.storage()
  await createLeaseTable(storage.admin, { table: storage.table })
  let statements = 0
  const opened: Kysely<any>[] = []
  return {
    storage,
    open: () => {
      const db = storage.connect(() => {
        statements++
      })
      if (storage.separateConnections) opened.push(db)
      return new KyselyBackend({ ...options, db, table: storage.table })
    },
    roundTrips: () => statements,
    // A released lease at `token`, written past the backend (through the uncounted admin connection).
    seedToken: async (workId, token) => {
      const flag = (value: boolean) => (target.filter === 'postgres' ? value : value ? 1 : 0)
      await storage.admin
        .insertInto(storage.table)
        .values({
          work_id: workId,
          token: token.toString(),
          holder: 'seeded',
          expires_at: 0,
          released: flag(true),
          clean_handoff: flag(true),
        })
        .execute()
    },
    acquireRoundTrips: target.dialect === 'mysql' ? 2 : 1,
    close: async () => {
      await Promise.all(opened.map((db) => db.destroy()))
      await dropLeaseTable(storage.admin, { table: storage.table })
      await storage.dispose()
    },
  }
}

export function kyselyFactory(target: Target): BackendFactory {
  return () => kyselyHarness(target)
}
