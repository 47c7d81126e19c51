import { type SuiteCasesOptions, suiteCases } from './suite-cases.js'

/** The slice of a test runner's API that {@link backendSuite} needs; vitest's and jest's fit. */
export interface TestRunnerApi {
  describe: (name: string, body: () => void) => void
  test: (
    name: string,
    body: (context: { skip?: (note?: string) => void }) => Promise<void>,
    timeoutMs?: number,
  ) => void
  afterAll?: (body: () => void) => void
}

/** Options of {@link backendSuite}. */
export interface BackendSuiteOptions extends SuiteCasesOptions, TestRunnerApi {
  /**
   * Names the backend in test titles and in the summary.
   *
   * ```ts
   * backendSuite({ name: 'postgres', describe, test, afterAll, factory })
   * ```
   */
  name: string
}

/**
 * Registers the conformance suite with a vitest-style runner: one `describe` per group, one `test`
 * per case. Cases the backend's capabilities rule out are skipped with their reason; with `afterAll`,
 * a summary of counts and every skip reason is printed when the suite ends.
 *
 * ```ts
 * import { afterAll, describe, test } from 'vitest'
 * import { backendSuite } from '@worklease/testkit'
 *
 * backendSuite({ name: 'memory', describe, test, afterAll, factory: () => {
 *   const store = new MemoryStore()
 *   return { open: ({ clock }) => new MemoryBackend({ store, clock }), close: async () => {} }
 * } })
 * ```
 */
export function backendSuite(options: BackendSuiteOptions): void {
  const { name, describe, test, afterAll } = options
  const cases = suiteCases(options)
  const tally = { passed: 0, failed: 0, skipped: [] as string[] }
  describe(`worklease conformance: ${name}`, () => {
    for (const group of new Set(cases.map((c) => c.group))) {
      describe(group, () => {
        for (const c of cases.filter((candidate) => candidate.group === group)) {
          test(
            c.name,
            async (context) => {
              let outcome: Awaited<ReturnType<typeof c.run>>
              try {
                outcome = await c.run()
              } catch (error) {
                tally.failed++
                throw error
              }
              if (outcome.status === 'skipped') {
                tally.skipped.push(`${group} > ${c.name}: ${outcome.reason}`)
                context.skip?.(outcome.reason)
                return
              }
              tally.passed++
            },
            c.timeoutMs,
          )
        }
      })
    }
  })
  afterAll?.(() => {
    const lines = [
      `[worklease testkit] ${name}: ${cases.length} cases, ${tally.passed} passed, ${tally.failed} failed, ${tally.skipped.length} skipped`,
      ...tally.skipped.map((line) => `  skipped ${line}`),
    ]
    console.log(lines.join('\n'))
  })
}
