import { leaserSuite, poolSuite } from '@worklease/core/testing'
import { backendSuite } from '@worklease/testkit'
import { afterAll, describe, test } from 'vitest'
import { kyselyFactory } from './kysely-harness.js'
import { runs, targetNamed } from './targets.js'

/**
 * The whole conformance suite and the runner's behaviour suite on one target, or both skipped whole
 * when WORKLEASE_DIALECTS leaves it out or its server's variable is unset (the reason is printed).
 */
export function conformance(name: string): void {
  const target = targetNamed(name)
  const on = runs(target)
  backendSuite({
    name: `kysely ${target.name}`,
    describe: on ? describe : describe.skip,
    test,
    afterAll: on ? afterAll : undefined,
    factory: kyselyFactory(target),
  })
  // The runner over the real server: renewal, waiting, handoff and loss with real (short) ttls.
  leaserSuite({
    name: `kysely ${target.name}`,
    describe: on ? describe : describe.skip,
    test,
    factory: kyselyFactory(target),
    ttlMs: 1_500,
  })
  // LeasePool over the real server: membership by listing, shares, handoffs, crashes.
  poolSuite({
    name: `kysely ${target.name}`,
    describe: on ? describe : describe.skip,
    test,
    factory: kyselyFactory(target),
    ttlMs: 1_500,
  })
}
