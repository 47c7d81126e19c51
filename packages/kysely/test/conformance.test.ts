import { backendSuite } from '@worklease/testkit'
import { afterAll, describe, test } from 'vitest'
import { kyselyFactory } from './kysely-harness.js'
import { selectedTargets } from './targets.js'

// The whole conformance suite once per database: PostgreSQL and MariaDB at POSTGRES_URL / MYSQL_URL,
// SQLite in a file (a connection per simulated process) and in :memory: (where every simulated process
// shares the one connection, so its races are not cross-connection).
for (const target of selectedTargets()) {
  backendSuite({ name: `kysely ${target.name}`, describe, test, afterAll, factory: kyselyFactory(target) })
}
