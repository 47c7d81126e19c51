export { defaultHolderId } from './default-holder-id.js'
export { Lease } from './lease.js'
export {
  isLeaseLostError,
  type LeaseEndReason,
  type LeaseLossReason,
  LeaseLostError,
  type LeaseLostErrorOptions,
} from './lease-lost-error.js'
export {
  type AcquireOptions,
  type CloseOptions,
  Leaser,
  type LeaserOptions,
  type RunOptions,
} from './leaser.js'
export { isLeaserClosedError, LeaserClosedError } from './leaser-closed-error.js'
export {
  type LeaseEventBase,
  type LeaserEventName,
  type LeaserEvents,
  type LeaserListener,
  leaserChannels,
} from './leaser-events.js'
export type { RetryPolicy } from './retry-policy.js'
export { systemTimers, type Timers } from './timers.js'
