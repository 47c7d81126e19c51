import { InvalidArgumentError } from '@worklease/spec'
import { type FenceConditionOptions, fenceCondition } from './fence-condition.js'

/** The parts of an `UpdateItem` or `PutItem` input that {@link withFence} reads and extends. */
export interface FenceableInput {
  UpdateExpression?: string
  Item?: Record<string, unknown>
  ConditionExpression?: string
  ExpressionAttributeNames?: Record<string, string>
  ExpressionAttributeValues?: Record<string, unknown>
}

// The SET clause keyword; not part of a placeholder (`#set`, `:set`) or a longer name.
const SET_CLAUSE = /(^|[^#:\w.])SET(?=\s)/i

/**
 * Fences your own `UpdateItem` or `PutItem` input: returns a copy whose condition also requires the
 * item's stored token to be at most `token` (or absent), and which writes `token` into the item in the
 * same request: a `SET` action added to the `UpdateExpression` (a `SET` clause is created if it has
 * none), or the attribute added to a `PutItem`'s `Item`. Your condition, names and values are kept; a
 * placeholder of yours that collides with the fence's (`#wlFence`, `:wlFence`) is refused, see
 * {@link FenceConditionOptions.placeholder}.
 *
 * A refused write fails with `ConditionalCheckFailedException` and changes nothing (with a condition
 * of your own, that may also be yours failing). `UpdateItem` creates a missing item, as it always does;
 * add `attribute_exists(...)` of the key to your condition if it must not.
 *
 * ```ts
 * import { UpdateItemCommand } from '@aws-sdk/client-dynamodb'
 * import { withFence } from '@worklease/dynamodb'
 *
 * await client.send(
 *   new UpdateItemCommand(
 *     withFence(
 *       {
 *         TableName: 'orders',
 *         Key: { id: { S: 'order-7' } },
 *         UpdateExpression: 'SET #total = :total REMOVE #draft',
 *         ExpressionAttributeNames: { '#total': 'total', '#draft': 'draft' },
 *         ExpressionAttributeValues: { ':total': { N: '42' } },
 *       },
 *       lease.fencingToken,
 *     ),
 *   ),
 * )
 * ```
 */
export function withFence<T extends FenceableInput>(
  input: T,
  token: bigint,
  options?: FenceConditionOptions,
): T {
  if (typeof input !== 'object' || input === null) throw new InvalidArgumentError('input must be an object')
  const fence = fenceCondition(token, options)
  const names = { ...input.ExpressionAttributeNames }
  const values = { ...input.ExpressionAttributeValues }
  for (const [placeholder, attribute] of Object.entries(fence.ExpressionAttributeNames)) {
    if (placeholder in names) throw collision(placeholder)
    names[placeholder] = attribute
  }
  for (const [placeholder, value] of Object.entries(fence.ExpressionAttributeValues)) {
    if (placeholder in values) throw collision(placeholder)
    values[placeholder] = value
  }
  const condition = input.ConditionExpression?.trim()
  const merged: T = {
    ...input,
    ConditionExpression: condition
      ? `(${condition}) AND ${fence.ConditionExpression}`
      : fence.ConditionExpression,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  }
  if (input.Item !== undefined) {
    if (input.UpdateExpression !== undefined) {
      throw new InvalidArgumentError('input has both Item (PutItem) and UpdateExpression (UpdateItem)')
    }
    const attribute = Object.values(fence.ExpressionAttributeNames)[0]!
    const value = Object.values(fence.ExpressionAttributeValues)[0]!
    merged.Item = { ...input.Item, [attribute]: value }
    return merged
  }
  const update = input.UpdateExpression?.trim() ?? ''
  const set = SET_CLAUSE.exec(update)
  merged.UpdateExpression = set
    ? `${update.slice(0, set.index + set[0].length)} ${fence.SetAction},${update.slice(set.index + set[0].length)}`
    : `SET ${fence.SetAction}${update ? ` ${update}` : ''}`
  return merged
}

function collision(placeholder: string): InvalidArgumentError {
  return new InvalidArgumentError(
    `the input already uses the placeholder ${placeholder}; pass another options.placeholder`,
  )
}
