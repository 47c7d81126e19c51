import { InvalidArgumentError, validateFencingToken } from '@worklease/spec'

/** Where the fencing helpers keep the highest token in your items, and the placeholders they use. */
export interface FenceConditionOptions {
  /**
   * The number attribute of your items that holds the highest fencing token written to each. An item
   * without it (or no item at all) has never been written under a lease and accepts any token. Default:
   * `'fencingToken'`.
   *
   * ```ts
   * const fence = fenceCondition(token, { attribute: 'leaseToken' })
   * ```
   */
  attribute?: string
  /**
   * The name the expression placeholders are made from: `#<placeholder>` for the attribute name and
   * `:<placeholder>` for the token. Change it only if your own expressions already use `#wlFence` or
   * `:wlFence` ({@link withFence} refuses to overwrite them). Default: `'wlFence'`.
   *
   * ```ts
   * const fence = fenceCondition(token, { placeholder: 'orderFence' }) // #orderFence, :orderFence
   * ```
   */
  placeholder?: string
}

/** The expression fragments of a fenced write, named as DynamoDB's request parameters. */
export interface FenceExpression {
  /** `(attribute_not_exists(#wlFence) OR #wlFence <= :wlFence)` */
  readonly ConditionExpression: string
  /** `#wlFence = :wlFence`: one action for the `SET` clause of an `UpdateExpression`. */
  readonly SetAction: string
  readonly ExpressionAttributeNames: Record<string, string>
  readonly ExpressionAttributeValues: Record<string, { N: string }>
}

/**
 * The fragments of a fenced `UpdateItem` or `PutItem`: a condition that holds when the item's stored
 * token is at most `token` (`<=`: a holder writes many times under one token) or when it has none, and
 * the `SET` action that raises the stored token in the same request. The token travels as the decimal
 * text of a DynamoDB number, so tokens above 2^53 compare exactly. {@link withFence} merges the
 * fragments into your own request.
 *
 * ```ts
 * const fence = fenceCondition(lease.fencingToken)
 * await client.send(
 *   new UpdateItemCommand({
 *     TableName: 'orders',
 *     Key: { id: { S: 'order-7' } },
 *     UpdateExpression: `SET #total = :total, ${fence.SetAction}`,
 *     ConditionExpression: fence.ConditionExpression,
 *     ExpressionAttributeNames: { '#total': 'total', ...fence.ExpressionAttributeNames },
 *     ExpressionAttributeValues: { ':total': { N: '42' }, ...fence.ExpressionAttributeValues },
 *   }),
 * ) // a stale token fails with ConditionalCheckFailedException and changes nothing
 * ```
 */
export function fenceCondition(token: bigint, options: FenceConditionOptions = {}): FenceExpression {
  if (typeof options !== 'object' || options === null)
    throw new InvalidArgumentError('options must be an object')
  // Read once each, so what is checked is what is used; a throwing getter is bad input.
  let attribute: unknown
  let placeholder: unknown
  try {
    ;({ attribute = 'fencingToken', placeholder = 'wlFence' } = options)
  } catch (error) {
    throw new InvalidArgumentError('options could not be read', { cause: error })
  }
  if (typeof attribute !== 'string' || attribute.length === 0) {
    throw new InvalidArgumentError('options.attribute must be a non-empty string')
  }
  // DynamoDB placeholders are `#` or `:` followed by alphanumerics (and underscores).
  if (typeof placeholder !== 'string' || !/^[A-Za-z0-9_]+$/.test(placeholder)) {
    throw new InvalidArgumentError('options.placeholder must be letters, digits and underscores')
  }
  validateFencingToken(token)
  const name = `#${placeholder}`
  const value = `:${placeholder}`
  return {
    ConditionExpression: `(attribute_not_exists(${name}) OR ${name} <= ${value})`,
    SetAction: `${name} = ${value}`,
    ExpressionAttributeNames: { [name]: attribute },
    ExpressionAttributeValues: { [value]: { N: token.toString() } },
  }
}
