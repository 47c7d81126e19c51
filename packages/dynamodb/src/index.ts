export {
  type CreatedLeaseTable,
  type CreateLeaseTableOptions,
  createLeaseTable,
  DEFAULT_LEASE_TABLE,
  listIndexDefinition,
} from './create-lease-table.js'
export { DynamoBackend, type DynamoBackendOptions } from './dynamo-backend.js'
export type { DynamoClient } from './dynamo-client.js'
export { type FenceConditionOptions, type FenceExpression, fenceCondition } from './fence-condition.js'
export { type SendFencedOptions, sendFenced, sendFencedOrThrow } from './send-fenced.js'
export { type FenceableInput, withFence } from './with-fence.js'
