export type { AcquiredWithCheckpoint, Backend, CheckpointRead } from './backend.js'
export type { BackendCapabilities } from './backend-capabilities.js'
export type { CallOptions, CheckpointOptions } from './call-options.js'
export { nextCheckpointSequence } from './checkpoint-sequence.js'
export { type Clock, checkClock, MAX_CLOCK_MS, readClock, systemClock } from './clock.js'
export {
  ErrorCode,
  FencedError,
  InvalidArgumentError,
  isFencedError,
  isInvalidArgumentError,
  isLeaseExpiredError,
  isLeaseHeldError,
  isTokensExhaustedError,
  isWorkleaseError,
  LeaseExpiredError,
  LeaseHeldError,
  type LeaseHeldErrorOptions,
  TokensExhaustedError,
  WorkleaseError,
} from './errors.js'
export {
  againAfterHostClockStep,
  HOST_CLOCK_STEP_MS,
  HostClockSteps,
  type HostClockStepsOptions,
  wallClockLead,
} from './host-clock-steps.js'
export { leaseHeldBy, type RefusingLease } from './lease-held-by.js'
export type { LeaseHolder } from './lease-holder.js'
export type { LeaseListing, LeasePage, ListOptions } from './lease-listing.js'
export type { LeaseRecord } from './lease-record.js'
export { raceAbort } from './race-abort.js'
export type { RenewOutcome } from './renew-outcome.js'
export type { RevokeOptions } from './revoke-options.js'
export {
  type AcquireArgs,
  type CheckpointArgs,
  compareWorkIds,
  createLeaseRecord,
  DEFAULT_LIST_LIMIT,
  isAbortSignal,
  type ListArgs,
  MAX_FENCING_TOKEN,
  MAX_ID_LENGTH,
  MAX_LIST_LIMIT,
  MAX_TTL_MS,
  type RecordArgs,
  type RenewArgs,
  type RenewManyArgs,
  type RevokeArgs,
  readOnce,
  recordExpiresAtMs,
  type StateCopyOptions,
  type ValidatedCallOptions,
  validateAcquireArgs,
  validateCallOptions,
  validateCheckpointArgs,
  validateCheckpointSequence,
  validateFencingToken,
  validateId,
  validateListArgs,
  validateRecord,
  validateRecordArgs,
  validateRenewArgs,
  validateRenewManyArgs,
  validateRevokeArgs,
  validateState,
  validateTtl,
} from './validation.js'
