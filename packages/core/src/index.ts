// The backends' errors and guards, so that code using the runner needs no second import.
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
  TokensExhaustedError,
  WorkleaseError,
} from '@worklease/spec'
export {
  bytesCodec,
  type CheckpointCodec,
  jsonCodec,
  type LeaseCheckpoint,
} from './checkpoint-codec.js'
export { defaultHolderId } from './default-holder-id.js'
export { type PoolPlan, type PoolView, planFairShare } from './fair-share.js'
export { Lease } from './lease.js'
export {
  isLeaseEndedError,
  isLeaseLostError,
  LeaseEndedError,
  type LeaseEndReason,
  type LeaseLossReason,
  LeaseLostError,
  type LeaseLostErrorOptions,
} from './lease-lost-error.js'
export { LeasePool, POOL_CHANNEL, type PoolEvent } from './lease-pool.js'
export type { LeasePoolOptions } from './lease-pool-options.js'
export { Leaser } from './leaser.js'
export { isLeaserClosedError, LeaserClosedError } from './leaser-closed-error.js'
export {
  type LeaseEventBase,
  type LeaserEventName,
  type LeaserEvents,
  type LeaserListener,
  leaserChannels,
} from './leaser-events.js'
export type { AcquireOptions, CloseOptions, LeaserOptions, RunOptions } from './leaser-options.js'
export type { RetryPolicy } from './retry-policy.js'
export { systemTimers, type Timers } from './timers.js'
export type { PoolHandler, PoolUnit } from './unit-runner.js'
