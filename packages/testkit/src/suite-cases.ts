import { againAfterHostClockStep } from '@worklease/spec'
import type { BackendFactory } from './backend-harness.js'
import { CaseContext } from './case-context.js'
import { acquireCases } from './groups/acquire-cases.js'
import { acquireWithCheckpointCases } from './groups/acquire-with-checkpoint-cases.js'
import { badInputCases } from './groups/bad-input-cases.js'
import { checkpointCases } from './groups/checkpoint-cases.js'
import { expiryCases } from './groups/expiry-cases.js'
import { handoffCases } from './groups/handoff-cases.js'
import { isolationCases } from './groups/isolation-cases.js'
import { listCases } from './groups/list-cases.js'
import { liveSignalCases } from './groups/live-signal-cases.js'
import { modelCases } from './groups/model-cases.js'
import { raceCases } from './groups/race-cases.js'
import { readCheckpointCases } from './groups/read-checkpoint-cases.js'
import { releaseCases } from './groups/release-cases.js'
import { renewCases } from './groups/renew-cases.js'
import { renewManyCases } from './groups/renew-many-cases.js'
import { revokeCases } from './groups/revoke-cases.js'
import { roundTripCases } from './groups/round-trip-cases.js'
import { skewCases } from './groups/skew-cases.js'
import { stateCases } from './groups/state-cases.js'
import { tokenCases } from './groups/token-cases.js'
import { unicodeCases } from './groups/unicode-cases.js'
import { liveSignalHarness } from './live-signal-backend.js'
import {
  type CaseDefinition,
  type CaseOutcome,
  GROUP_NAMES,
  type GroupName,
  type SuiteCase,
} from './suite-case.js'

/** Every group's case definitions, by name; each is also exported on its own. */
export const groups: Readonly<Record<GroupName, readonly CaseDefinition[]>> = {
  acquire: acquireCases,
  renew: renewCases,
  checkpoint: checkpointCases,
  release: releaseCases,
  readCheckpoint: readCheckpointCases,
  handoff: handoffCases,
  tokens: tokenCases,
  expiry: expiryCases,
  skew: skewCases,
  races: raceCases,
  badInput: badInputCases,
  state: stateCases,
  unicode: unicodeCases,
  isolation: isolationCases,
  roundTrips: roundTripCases,
  model: modelCases,
  list: listCases,
  revoke: revokeCases,
  renewMany: renewManyCases,
  acquireWithCheckpoint: acquireWithCheckpointCases,
  liveSignal: liveSignalCases,
}

const DEFAULT_TIMEOUT_MS = 20_000

/** Options of {@link suiteCases}. */
export interface SuiteCasesOptions {
  /**
   * Makes a fresh, isolated harness for each case.
   *
   * ```ts
   * suiteCases({ factory: () => ({ open: ({ clock }) => new MemoryBackend({ store, clock }), close: async () => {} }) })
   * ```
   */
  factory: BackendFactory
  /**
   * Runs only these groups (default: all, in {@link GROUP_NAMES} order).
   *
   * ```ts
   * suiteCases({ factory, groups: ['acquire', 'races'] })
   * ```
   */
  groups?: readonly GroupName[]
}

/**
 * Binds one case definition to a factory: a fresh harness per run, closed whatever happens. Cases wait
 * on real time against the store's clock, often the host's wall clock: one that fails while that
 * clock stepped is run once more, with a fresh harness, and says why (`againAfterHostClockStep`).
 */
export function bindCase(group: GroupName, definition: CaseDefinition, factory: BackendFactory): SuiteCase {
  const name = `${group} > ${definition.name}`
  return {
    group,
    name: definition.name,
    timeoutMs: definition.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    run: () => againAfterHostClockStep('worklease testkit', name, () => runCase(definition, factory)),
  }
}

async function runCase(definition: CaseDefinition, factory: BackendFactory): Promise<CaseOutcome> {
  const opened = await factory()
  const harness = definition.liveSignal ? liveSignalHarness(opened) : opened
  let failed = false
  try {
    const context = await CaseContext.create(harness)
    const reason = definition.unsupported?.(context.capabilities, {
      countsRoundTrips: typeof harness.roundTrips === 'function',
      seedsTokens: typeof harness.seedToken === 'function',
      failsCalls: typeof harness.failNextCall === 'function',
    })
    if (reason !== undefined) return { status: 'skipped', reason }
    await definition.run(context)
    return { status: 'passed' }
  } catch (error) {
    failed = true
    throw error
  } finally {
    // A failing close must not hide the contract violation that made the case fail.
    await harness.close().catch((error: unknown) => {
      if (!failed) throw error
    })
  }
}

/**
 * The whole suite as data: one {@link SuiteCase} per case, for any test runner.
 *
 * ```ts
 * for (const c of suiteCases({ factory })) {
 *   const outcome = await c.run()
 *   console.log(c.group, c.name, outcome.status)
 * }
 * ```
 */
export function suiteCases({ factory, groups: selected = GROUP_NAMES }: SuiteCasesOptions): SuiteCase[] {
  return selected.flatMap((group) => groups[group].map((definition) => bindCase(group, definition, factory)))
}
