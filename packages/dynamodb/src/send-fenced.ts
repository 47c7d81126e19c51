import {
  PutItemCommand,
  type PutItemCommandInput,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb'
import {
  FencedError,
  InvalidArgumentError,
  isAbortSignal,
  raceAbort,
  validateCallOptions,
} from '@worklease/spec'
import type { DynamoClient } from './dynamo-client.js'
import type { FenceConditionOptions } from './fence-condition.js'
import { sendOptions, singleAttempt } from './single-attempt.js'
import { fenceSnapshot, readFenceable } from './with-fence.js'

/** Options of {@link sendFenced}: the fence's attribute and placeholder, and the SDK's abort signal. */
export interface SendFencedOptions extends FenceConditionOptions {
  /**
   * Passed to `client.send` as `abortSignal`. When it fires, before or while the write is out, the
   * call rejects with its `reason` (with `lease.signal`, the lease's `LeaseLostError`), not the SDK's
   * own `AbortError`; a write already sent may still land, and its fence judges it there.
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
 * failed), nothing changed. An `abortSignal` that fires rejects with its reason. Other errors
 * propagate as the SDK threw them, including a lost reply: the request is sent exactly once, whatever
 * your client's `maxAttempts`, because the SDK's retry of a write that landed but whose reply was
 * lost would come back refused (or apply an `ADD` twice) and be reported as "nothing changed". Retry such an error yourself: with the same token the retry is
 * accepted again. Your input and options are read once, and refused as {@link withFence} refuses
 * them (`InvalidArgumentError`, before any request).
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
  // Only these copies are used from here on: read twice, an input could have PutItem chosen on one
  // answer and the item sent without its fence from another (see readFenceable).
  const { abortSignal, ...fence } = readOptions(options)
  if (typeof client !== 'object' || client === null || typeof client.send !== 'function') {
    throw new InvalidArgumentError('client must be a DynamoDBClient')
  }
  const snapshot = readFenceable(input)
  const fenced = fenceSnapshot(snapshot, token, fence)
  if (abortSignal !== undefined && !isAbortSignal(abortSignal)) {
    throw new InvalidArgumentError('options.abortSignal must be an AbortSignal')
  }
  // The check every backend call makes: an aborted signal throws its reason now, whatever it is (a
  // caller's own InvalidArgumentError included: the call's outcome, not a word on the option). It
  // listens to the caller's signal, once, and hands back a signal of its own that follows it: only
  // that one is used from here on, or the caller's would be asked again with the write already out.
  const { signal } = validateCallOptions({ signal: abortSignal })
  const command =
    'Item' in snapshot && snapshot.Item !== undefined
      ? new PutItemCommand(fenced as PutItemCommandInput)
      : new UpdateItemCommand(fenced as UpdateItemCommandInput)
  try {
    // Raced, not only passed: the SDK hears the signal only at its HTTP handler (see DynamoBackend).
    await raceAbort(client.send(singleAttempt(command), sendOptions(signal)), signal)
    return undefined
  } catch (error) {
    // By name rather than instanceof: the caller's copy of the SDK may not be the one this package resolves.
    if (error instanceof Error && error.name === 'ConditionalCheckFailedException') return error
    throw error
  }
}

function readOptions(options: unknown): SendFencedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options must be an object')
  }
  try {
    return { ...options }
  } catch (error) {
    throw new InvalidArgumentError('options could not be read', { cause: error })
  }
}
