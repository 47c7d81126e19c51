import type { BackendFactory } from './backend-harness.js'
import type { TestRunnerApi } from './backend-suite.js'
import { mutants as allMutants, type Mutant, mutateFactory } from './mutants.js'
import { suiteCases } from './suite-cases.js'

/** Options of {@link selfCheck}. */
export interface SelfCheckOptions extends Pick<TestRunnerApi, 'describe' | 'test'> {
  /**
   * Names the backend in test titles.
   *
   * ```ts
   * selfCheck({ name: 'redis', describe, test, factory })
   * ```
   */
  name: string
  /**
   * The same factory the driver gives `backendSuite`.
   *
   * ```ts
   * selfCheck({ name: 'redis', describe, test, factory: redisFactory })
   * ```
   */
  factory: BackendFactory
  /**
   * Which mutants to run (default: all of {@link mutants}).
   *
   * ```ts
   * selfCheck({ name: 'redis', describe, test, factory, mutants: mutants.slice(0, 3) })
   * ```
   */
  mutants?: readonly Mutant[]
}

/**
 * Proves the suite can fail on your driver: runs each mutant's group over your own backends wrapped
 * with that bug, and fails if no case in the group notices. A passing `backendSuite` next to a passing
 * `selfCheck` means the harness is wired so that failures would show.
 *
 * ```ts
 * import { describe, test } from 'vitest'
 * import { selfCheck } from '@worklease/testkit'
 *
 * selfCheck({ name: 'redis', describe, test, factory: redisFactory })
 * ```
 */
export function selfCheck({ name, describe, test, factory, mutants = allMutants }: SelfCheckOptions): void {
  describe(`worklease testkit self-check: ${name}`, () => {
    for (const mutant of mutants) {
      const cases = suiteCases({ factory: mutateFactory(factory, mutant), groups: [mutant.caughtBy] })
      const timeoutMs = cases.reduce((sum, c) => sum + c.timeoutMs, 0)
      test(
        `the ${mutant.caughtBy} group catches "${mutant.name}"`,
        async (context) => {
          const failures: string[] = []
          const skips: string[] = []
          for (const c of cases) {
            try {
              const outcome = await c.run()
              if (
                outcome.status === 'skipped' &&
                (mutant.needsRoundTrips || mutant.caughtOnlyBy === c.name)
              ) {
                context.skip?.(outcome.reason)
                return
              }
              if (outcome.status === 'skipped') skips.push(outcome.reason)
            } catch (error) {
              failures.push(
                `${c.name}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
              )
            }
          }
          // An optional operation the backend lacks: every case of its group skipped, so no bug to find.
          if (mutant.needsOptionalOperation && skips.length === cases.length) {
            context.skip?.(skips[0])
            return
          }
          if (failures.length === 0) {
            throw new Error(`no case of the ${mutant.caughtBy} group failed with the "${mutant.name}" mutant`)
          }
        },
        timeoutMs,
      )
    }
  })
}
