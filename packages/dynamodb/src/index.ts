export { type CreateLeaseTableOptions, createLeaseTable } from './create-lease-table.js'
export { DynamoBackend, type DynamoBackendOptions } from './dynamo-backend.js'
export type { DynamoClient } from './dynamo-client.js'
