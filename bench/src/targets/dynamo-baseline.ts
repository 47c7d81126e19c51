import { type AttributeValue, type DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import { type BaselineLease, type LeaseOps, LostLeaseError } from '../lease-ops.js'

const TRUE: AttributeValue = { BOOL: true }
const FALSE: AttributeValue = { BOOL: false }
const num = (value: number | bigint): AttributeValue => ({ N: String(value) })
const VALIDITY = '#tok = :tok AND #hld = :hld AND #rel = :false'
const VALIDITY_NAMES = { '#tok': 'fencingToken', '#hld': 'holderId', '#rel': 'released' }

const isConditionFailure = (error: unknown) =>
  error instanceof Error && error.name === 'ConditionalCheckFailedException'

/**
 * The requests a careful developer would write by hand for the item layout @worklease/dynamodb uses
 * (its dynamo-backend.ts): one conditional UpdateItem per call, the same expressions and attribute
 * values, through the same `DynamoDBClient` (with its default retry middleware; the driver replaces it
 * per command with a single attempt, which is part of what is measured).
 *
 * ```ts
 * const ops = dynamoBaseline(client, 'bench-baseline')
 * ```
 */
export function dynamoBaseline(client: DynamoDBClient, tableName: string): LeaseOps<BaselineLease> {
  const key = (workId: string) => ({ workId: { S: workId } })
  const validValues = (held: BaselineLease) => ({
    ':tok': num(held.token),
    ':hld': { S: held.holderId },
    ':false': FALSE,
  })
  const update = async (operation: string, input: ConstructorParameters<typeof UpdateItemCommand>[0]) => {
    try {
      return await client.send(new UpdateItemCommand(input))
    } catch (error) {
      if (isConditionFailure(error)) throw new LostLeaseError(operation)
      throw error
    }
  }
  return {
    async acquire(workId, holderId, ttlMs) {
      const now = Date.now()
      try {
        const output = await client.send(
          new UpdateItemCommand({
            TableName: tableName,
            Key: key(workId),
            UpdateExpression:
              'SET #tok = if_not_exists(#tok, :zero) + :one, #hld = :hld, #exp = :exp, #rel = :false, ' +
              '#clean = if_not_exists(#rel, :true)',
            ConditionExpression: 'attribute_not_exists(#pk) OR #exp <= :now OR #rel = :true',
            ExpressionAttributeNames: {
              '#pk': 'workId',
              '#tok': 'fencingToken',
              '#hld': 'holderId',
              '#exp': 'expiresAt',
              '#rel': 'released',
              '#clean': 'cleanHandoff',
            },
            ExpressionAttributeValues: {
              ':zero': num(0),
              ':one': num(1),
              ':hld': { S: holderId },
              ':exp': num(now + ttlMs),
              ':now': num(now),
              ':false': FALSE,
              ':true': TRUE,
            },
            ReturnValues: 'UPDATED_NEW',
          }),
        )
        return { workId, holderId, token: BigInt(output.Attributes?.fencingToken?.N ?? '0') }
      } catch (error) {
        if (isConditionFailure(error)) return null
        throw error
      }
    },
    async checkpoint(held, state, ttlMs) {
      await update('checkpoint', {
        TableName: tableName,
        Key: key(held.workId),
        UpdateExpression: 'SET #st = :st, #exp = :exp',
        ConditionExpression: VALIDITY,
        ExpressionAttributeNames: { ...VALIDITY_NAMES, '#st': 'state', '#exp': 'expiresAt' },
        ExpressionAttributeValues: {
          ...validValues(held),
          ':st': { B: state },
          ':exp': num(Date.now() + ttlMs),
        },
      })
    },
    async renew(held, ttlMs) {
      const now = Date.now()
      await update('renew', {
        TableName: tableName,
        Key: key(held.workId),
        UpdateExpression: 'SET #exp = :exp',
        ConditionExpression: `${VALIDITY} AND #exp > :now`,
        ExpressionAttributeNames: { ...VALIDITY_NAMES, '#exp': 'expiresAt' },
        ExpressionAttributeValues: { ...validValues(held), ':exp': num(now + ttlMs), ':now': num(now) },
      })
    },
    async release(held) {
      await update('release', {
        TableName: tableName,
        Key: key(held.workId),
        UpdateExpression: 'SET #rel = :true, #exp = :past',
        ConditionExpression: VALIDITY,
        ExpressionAttributeNames: { ...VALIDITY_NAMES, '#exp': 'expiresAt' },
        ExpressionAttributeValues: { ...validValues(held), ':true': TRUE, ':past': num(Date.now() - 1) },
      })
    },
  }
}
