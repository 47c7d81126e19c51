import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb'
import { type BaselineLease, type LeaseOps, LostLeaseError } from '../lease-ops.js'

const TRUE: AttributeValue = { BOOL: true }
const FALSE: AttributeValue = { BOOL: false }
const MAX_TOKEN = '9223372036854775807'
const num = (value: number | bigint): AttributeValue => ({ N: String(value) })
const VALIDITY = '#tok = :tok AND #hld = :hld AND #rel = :false'
const VALIDITY_NAMES = { '#tok': 'fencingToken', '#hld': 'holderId', '#rel': 'released' }
const NEWER_SEQUENCE = '(attribute_not_exists(#ctok) OR #ctok <> :tok OR #cseq < :seq)'
const SEQUENCE_NAMES = { '#ctok': 'checkpointToken', '#cseq': 'checkpointSequence', '#sb': 'stateBytes' }

const isConditionFailure = (error: unknown) =>
  error instanceof Error && error.name === 'ConditionalCheckFailedException'

/**
 * The requests @worklease/dynamodb sends in a lease cycle, copied from its dynamo-backend.ts and
 * written by hand, through the same `DynamoDBClient`: the conditional UpdateItem that takes a free
 * lease under the token ceiling (a refusal is followed by one consistent read of the item, which the
 * driver makes to name the holder), the ordered checkpoint whose expiry only moves forward, the renew
 * that only extends, the release; on a refused checkpoint or renew the same read, then what the driver
 * decides from it. No validation, no record objects, no error classes. It keeps the client's default
 * retry middleware, where the driver replaces it per command with a single attempt: that difference
 * is part of what is measured. The bench compares the shape of every request both sides sent
 * (`statementDrift` in the results), so this file cannot drift from the driver unnoticed.
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
  const readItem = (workId: string) =>
    client.send(
      new GetItemCommand({
        TableName: tableName,
        Key: key(workId),
        ConsistentRead: true,
        ProjectionExpression: '#tok, #hld, #rel, #exp, #ctok, #cseq',
        ExpressionAttributeNames: {
          ...VALIDITY_NAMES,
          '#exp': 'expiresAt',
          '#ctok': 'checkpointToken',
          '#cseq': 'checkpointSequence',
        },
      }),
    )
  // The driver's conditional write: 'written', or the item as read after a refusal (undefined: gone).
  const update = async (held: BaselineLease, input: Omit<UpdateItemCommandInput, 'TableName' | 'Key'>) => {
    try {
      await client.send(new UpdateItemCommand({ TableName: tableName, Key: key(held.workId), ...input }))
      return 'written' as const
    } catch (error) {
      if (!isConditionFailure(error)) throw error
      const { Item } = await readItem(held.workId)
      const valid =
        Item?.fencingToken?.N === String(held.token) &&
        Item.holderId?.S === held.holderId &&
        Item.released?.BOOL === false
      return valid ? Item : undefined
    }
  }
  // Checkpoints are ordered by a sequence that only grows, seeded as the driver's are (microseconds).
  let sequence = Date.now() * 1000
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
              '#clean = if_not_exists(#rel, :true), #lk = :lk',
            ConditionExpression:
              '(attribute_not_exists(#pk) OR #exp <= :now OR #rel = :true) AND ' +
              '(attribute_not_exists(#tok) OR #tok < :max)',
            ExpressionAttributeNames: {
              '#pk': 'workId',
              '#tok': 'fencingToken',
              '#hld': 'holderId',
              '#exp': 'expiresAt',
              '#rel': 'released',
              '#clean': 'cleanHandoff',
              '#lk': 'listKey',
            },
            ExpressionAttributeValues: {
              ':lk': { S: 'lease' },
              ':zero': num(0),
              ':one': num(1),
              ':hld': { S: holderId },
              ':exp': num(now + ttlMs),
              ':now': num(now),
              ':max': { N: MAX_TOKEN },
              ':false': FALSE,
              ':true': TRUE,
            },
            ReturnValues: 'UPDATED_NEW',
          }),
        )
        return { workId, holderId, token: BigInt(output.Attributes?.fencingToken?.N ?? '0') }
      } catch (error) {
        if (!isConditionFailure(error)) throw error
        await readItem(workId)
        return null
      }
    },
    async checkpoint(held, state, ttlMs) {
      const seq = ++sequence
      const exp = num(Date.now() + ttlMs)
      const outcome = await update(held, {
        UpdateExpression: 'SET #st = :st, #sb = :sb, #ctok = :tok, #cseq = :seq, #exp = :exp',
        ConditionExpression: `${VALIDITY} AND ${NEWER_SEQUENCE} AND #exp <= :exp`,
        ExpressionAttributeNames: {
          ...VALIDITY_NAMES,
          '#st': 'state',
          '#exp': 'expiresAt',
          ...SEQUENCE_NAMES,
        },
        ExpressionAttributeValues: {
          ...validValues(held),
          ':st': { B: state },
          ':seq': num(seq),
          ':sb': num(state.byteLength),
          ':exp': exp,
        },
      })
      if (outcome === undefined) throw new LostLeaseError('checkpoint')
      if (outcome === 'written') return
      // Refused while valid, as the driver finishes it: a renew moved the expiry past this one (store
      // the state alone), or a later checkpoint landed (extend alone).
      const later = Number(outcome.expiresAt?.N) >= Number(exp.N)
      if (later) {
        await update(held, {
          UpdateExpression: 'SET #st = :st, #sb = :sb, #ctok = :tok, #cseq = :seq',
          ConditionExpression: `${VALIDITY} AND ${NEWER_SEQUENCE}`,
          ExpressionAttributeNames: { ...VALIDITY_NAMES, '#st': 'state', ...SEQUENCE_NAMES },
          ExpressionAttributeValues: {
            ...validValues(held),
            ':st': { B: state },
            ':seq': num(seq),
            ':sb': num(state.byteLength),
          },
        })
      } else {
        await update(held, {
          UpdateExpression: 'SET #exp = :exp',
          ConditionExpression: `${VALIDITY} AND #exp <= :exp`,
          ExpressionAttributeNames: { ...VALIDITY_NAMES, '#exp': 'expiresAt' },
          ExpressionAttributeValues: { ...validValues(held), ':exp': exp },
        })
      }
    },
    async renew(held, ttlMs) {
      const now = Date.now()
      const exp = now + ttlMs
      const outcome = await update(held, {
        UpdateExpression: 'SET #exp = :exp',
        ConditionExpression: `${VALIDITY} AND #exp > :now AND #exp <= :exp`,
        ExpressionAttributeNames: { ...VALIDITY_NAMES, '#exp': 'expiresAt' },
        ExpressionAttributeValues: { ...validValues(held), ':exp': num(exp), ':now': num(now) },
      })
      if (outcome === undefined) throw new LostLeaseError('renew')
      if (outcome !== 'written' && Number(outcome.expiresAt?.N) < exp) throw new LostLeaseError('renew')
    },
    async release(held) {
      try {
        await client.send(
          new UpdateItemCommand({
            TableName: tableName,
            Key: key(held.workId),
            UpdateExpression: 'SET #rel = :true, #exp = :past',
            ConditionExpression: VALIDITY,
            ExpressionAttributeNames: { ...VALIDITY_NAMES, '#exp': 'expiresAt' },
            ExpressionAttributeValues: { ...validValues(held), ':true': TRUE, ':past': num(Date.now() - 1) },
          }),
        )
      } catch (error) {
        if (isConditionFailure(error)) throw new LostLeaseError('release')
        throw error
      }
    },
  }
}
