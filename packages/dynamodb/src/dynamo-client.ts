/**
 * What the backend needs from a DynamoDB client: the low-level `DynamoDBClient` of
 * `@aws-sdk/client-dynamodb` v3 satisfies it. Not the `DynamoDBDocumentClient` of `lib-dynamodb`: its
 * number conversion would turn fencing tokens into lossy JavaScript numbers.
 *
 * ```ts
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
 * const client: DynamoClient = new DynamoDBClient({ region: 'eu-west-1' })
 * ```
 */
export interface DynamoClient {
  // `any`: the SDK's overloads are generic over every command type.
  send(command: any, options?: { abortSignal?: AbortSignal }): Promise<any>
}
