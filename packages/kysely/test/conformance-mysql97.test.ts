import { sql } from 'kysely'
import { describe, expect, test } from 'vitest'
import { conformance } from './conformance.js'
import { runs, targetNamed } from './targets.js'

// Oracle MySQL 9.7 from scripts/servers.sh (MYSQL97_URL): acquire without RETURNING, two statements.
conformance('mysql97')

const target = targetNamed('mysql97')

describe.skipIf(!runs(target))('kysely mysql97: the server as production runs it', () => {
  // Without the binary log, InnoDB makes a commit visible before it logs it (see the README).
  test('the binary log is on, in rows (the default format)', async () => {
    const storage = await target.storage()
    try {
      const { rows } = await sql<{ logBin: number; format: string }>`
        SELECT @@log_bin AS logBin, @@binlog_format AS format`.execute(storage.admin)
      expect(rows).toEqual([{ logBin: 1, format: 'ROW' }])
    } finally {
      await storage.dispose()
    }
  })
})
