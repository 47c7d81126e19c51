export { ContractViolation } from './assertions.js'
export type { BackendFactory, BackendHarness, OpenOptions } from './backend-harness.js'
export { type BackendSuiteOptions, backendSuite, type TestRunnerApi } from './backend-suite.js'
export { CaseContext, LONG_TTL_MS, SHORT_TTL_MS } from './case-context.js'
export {
  FaultInjectingBackend,
  type FaultInjectingBackendOptions,
  type FaultOperation,
  type FaultTarget,
  InjectedFaultError,
} from './fault-injecting-backend.js'
export { acquireCases } from './groups/acquire-cases.js'
export { badInputCases } from './groups/bad-input-cases.js'
export { checkpointCases } from './groups/checkpoint-cases.js'
export { expiryCases } from './groups/expiry-cases.js'
export { handoffCases } from './groups/handoff-cases.js'
export { isolationCases } from './groups/isolation-cases.js'
export { modelCases } from './groups/model-cases.js'
export { raceCases } from './groups/race-cases.js'
export { readCheckpointCases } from './groups/read-checkpoint-cases.js'
export { releaseCases } from './groups/release-cases.js'
export { renewCases } from './groups/renew-cases.js'
export { roundTripCases } from './groups/round-trip-cases.js'
export { skewCases } from './groups/skew-cases.js'
export { stateCases } from './groups/state-cases.js'
export { tokenCases } from './groups/token-cases.js'
export { unicodeCases } from './groups/unicode-cases.js'
export { ManualClock } from './manual-clock.js'
export { ForwardingBackend, type Mutant, mutants, mutateFactory } from './mutants.js'
export { type ModelOutcome, type ModelRecord, ReferenceModel } from './reference-model.js'
export { type SelfCheckOptions, selfCheck } from './self-check.js'
export type { CaseDefinition, CaseOutcome, GroupName, SuiteCase } from './suite-case.js'
export { GROUP_NAMES } from './suite-case.js'
export { bindCase, groups, type SuiteCasesOptions, suiteCases } from './suite-cases.js'
