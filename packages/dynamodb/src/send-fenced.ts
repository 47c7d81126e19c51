import {
  PutItemCommand,
  type PutItemCommandInput,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb'
import { FencedError } from '@worklease/spec'
import type { DynamoClient } from './dynamo-client.js'
import type { FenceConditionOptions } from './fence-condition.js'
import { singleAttempt } from './single-attempt.js'
import { withFence } from './with-fence.js'

/** Options of {@link sendFenced}: the fence's attribute and placeholder, and the SDK's abort signal. */
export interface SendFencedOptions extends FenceConditionOptions {
  /**
   * Passed to `client.send` as `abortSignal`.
   *
   * ```ts
   * await sendFenced(client, input, token, { abortSignal: lease.signal })
   * ```
   */
  abortSignal?: AbortSignal
}

/**
 * Sends your `UpdateItem` (an input with `Key` and `UpdateExpression`) or `PutItem` (an input with
 * `Item`) fenced by {@link withFence}, and resolves whether it landed: `false` when DynamoDB refused the
 * condition (`ConditionalCheckFailedException`: a newer token has written, or a condition of yours
 * failed), nothing changed. Other errors propagate as the SDK threw them, including a lost reply: the
 * request is sent exactly once, whatever your client's `maxAttempts`, because the SDK's retry of a
 * write that landed but whose reply was lost would come back refused (or apply an `ADD` twice) and
 * be reported as "nothing changed". Retry such an error yourself: with the same token the retry is
 * accepted again.
 *
 * ```ts
 * const landed = await sendFenced(
 *   client,
 *   { TableName: 'orders', Item: { id: { S: 'order-7' }, total: { N: '42' } } },
 *   lease.fencingToken,
 * )
 * if (!landed) return // a newer holder has written: stop working on this unit
 * ```
 */
export async function sendFenced(
  client: DynamoClient,
  input: UpdateItemCommandInput | PutItemCommandInput,
  token: bigint,
  options: SendFencedOptions = {},
): Promise<boolean> {
  return (await send(client, input, token, options)) === undefined
}

/**
 * {@link sendFenced} that throws `FencedError` (code `FENCED`, the SDK's error as its `cause`) instead of
 * resolving `false`.
 *
 * ```ts
 * await sendFencedOrThrow(client, { TableName: 'orders', Item: { id: { S: 'order-7' } } }, token)
 * ```
 */
export async function sendFencedOrThrow(
  client: DynamoClient,
  input: UpdateItemCommandInput | PutItemCommandInput,
  token: bigint,
  options: SendFencedOptions = {},
): Promise<void> {
  const refused = await send(client, input, token, options)
  if (refused) {
    throw new FencedError('the fenced write was refused: a newer fencing token has written this item', {
      cause: refused,
    })
  }
}

/** Sends the fenced write; resolves the ConditionalCheckFailedException if refused, else undefined. */
async function send(
  client: DynamoClient,
  input: UpdateItemCommandInput | PutItemCommandInput,
  token: bigint,
  options: SendFencedOptions,
): Promise<Error | undefined> {
  const { abortSignal, ...fence } = options
  const command =
    'Item' in input && input.Item !== undefined
      ? new PutItemCommand(withFence(input as PutItemCommandInput, token, fence))
      : new UpdateItemCommand(withFence(input as UpdateItemCommandInput, token, fence))
  try {
    await client.send(singleAttempt(command), abortSignal ? { abortSignal } : undefined)
    return undefined
  } catch (error) {
    // By name rather than instanceof: the caller's copy of the SDK may not be the one this package resolves.
    if (error instanceof Error && error.name === 'ConditionalCheckFailedException') return error
    throw error
  }
}
