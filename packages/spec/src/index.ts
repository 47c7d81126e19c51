export type { Backend, CheckpointRead } from './backend.js'
export type { BackendCapabilities } from './backend-capabilities.js'
export type { CallOptions } from './call-options.js'
export { type Clock, systemClock } from './clock.js'
export {
  ErrorCode,
  FencedError,
  InvalidArgumentError,
  isFencedError,
  isInvalidArgumentError,
  isLeaseExpiredError,
  isLeaseHeldError,
  isWorkleaseError,
  LeaseExpiredError,
  LeaseHeldError,
  WorkleaseError,
} from './errors.js'
export type { LeaseRecord } from './lease-record.js'
export { raceAbort } from './race-abort.js'
export {
  createLeaseRecord,
  MAX_FENCING_TOKEN,
  MAX_ID_LENGTH,
  MAX_TTL_MS,
  validateAcquireArgs,
  validateCallOptions,
  validateCheckpointArgs,
  validateFencingToken,
  validateId,
  validateRecord,
  validateRecordArgs,
  validateRenewArgs,
  validateState,
  validateTtl,
} from './validation.js'
