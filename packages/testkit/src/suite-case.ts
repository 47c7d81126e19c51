import type { BackendCapabilities } from '@worklease/spec'
import type { CaseContext } from './case-context.js'

/** The groups of the conformance suite, in the order they run. */
export const GROUP_NAMES = [
  'acquire',
  'renew',
  'checkpoint',
  'release',
  'readCheckpoint',
  'handoff',
  'tokens',
  'expiry',
  'skew',
  'races',
  'badInput',
  'state',
  'unicode',
  'isolation',
  'roundTrips',
  'model',
  'list',
  'revoke',
  'renewMany',
  'acquireWithCheckpoint',
  'liveSignal',
] as const

export type GroupName = (typeof GROUP_NAMES)[number]

/** What the harness offers besides the backend, for {@link CaseDefinition.unsupported}. */
export interface SupportContext {
  /** The harness has `roundTrips()`. */
  readonly countsRoundTrips: boolean
  /** The harness has `seedToken()`. */
  readonly seedsTokens: boolean
  /** The harness has `failNextCall()`. */
  readonly failsCalls?: boolean
}

/** One case as a group defines it: what it needs and what it checks. */
export interface CaseDefinition {
  readonly name: string
  /** Returns why the case cannot run on a backend with these capabilities, or `undefined` if it can. */
  readonly unsupported?: (capabilities: BackendCapabilities, context: SupportContext) => string | undefined
  /** Case-specific time budget; the default is enough for cases that wait out one short ttl. */
  readonly timeoutMs?: number
  /**
   * Every call the case makes carries a live AbortSignal, as the Leaser's calls do (the
   * `liveSignal` group: cases of other groups run again this way).
   */
  readonly liveSignal?: boolean
  readonly run: (context: CaseContext) => Promise<void>
}

/** The outcome of {@link SuiteCase.run}. */
export type CaseOutcome =
  | { readonly status: 'passed' }
  | { readonly status: 'skipped'; readonly reason: string }

/**
 * A case ready to run on any test runner: vitest (through `backendSuite`), `node:test`, or a plain
 * loop. `run` rejects when the backend breaks the contract.
 *
 * ```ts
 * import { test } from 'node:test'
 * for (const c of suiteCases({ factory })) {
 *   test(`${c.group} > ${c.name}`, async (t) => {
 *     const outcome = await c.run()
 *     if (outcome.status === 'skipped') t.skip(outcome.reason)
 *   })
 * }
 * ```
 */
export interface SuiteCase {
  readonly group: GroupName
  readonly name: string
  readonly timeoutMs: number
  run(): Promise<CaseOutcome>
}
