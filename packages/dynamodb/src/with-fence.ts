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

// The SET clause keyword: not part of a placeholder (`#set`, `:set`) or a longer or nested name
// (`reset`, `#a.set`), and followed by whitespace or the `#` of the first action's path, as DynamoDB
// parses `SET#total = :total`. Any case, as DynamoDB's keywords are. REMOVE, ADD and DELETE need no
// such search: without a SET clause, one is put in front of the expression, whatever follows it.
const SET_CLAUSE = /(^|[^#:\w.])SET(?=[\s#])/i

// What the helper reads of the input beyond the copy of its own properties.
const FENCEABLE_KEYS = [
  'UpdateExpression',
  'Item',
  'ConditionExpression',
  'ExpressionAttributeNames',
  'ExpressionAttributeValues',
] as const
const EXPRESSION_KEYS = ['UpdateExpression', 'ConditionExpression'] as const
const MAP_KEYS = ['Item', 'ExpressionAttributeNames', 'ExpressionAttributeValues'] as const

// Marks an input as read by readFenceable, so the type system keeps a caller's object from
// reaching fenceSnapshot unread. Type-only: no such property exists.
declare const readByReadFenceable: unique symbol

/**
 * A plain copy of the caller's input made by {@link readFenceable}: only data properties, so reading
 * it again gives the same answer.
 */
export type FenceableSnapshot<T extends FenceableInput> = T & { readonly [readByReadFenceable]: true }

/**
 * Reads the caller's input once: its own properties through one spread, any of the properties the
 * helper uses that the spread did not copy (an inherited getter, say) once more each, and `Item` and
 * the attribute maps copied once too, since the helper reads and rewrites them. A getter or Proxy
 * that answers differently on a second read cannot then have one request chosen and another sent
 * (a PutItem without the fence, say). A throwing getter is bad input, like a wrong type. `null`
 * counts as absent, as the helper always took it (inputs built from JSON use it for "none").
 */
export function readFenceable<T extends FenceableInput>(input: T): FenceableSnapshot<T> {
  if (typeof input !== 'object' || input === null) throw new InvalidArgumentError('input must be an object')
  const snapshot = readOrRefuse('input', () => {
    const own: Record<string, unknown> = { ...(input as object) }
    for (const key of FENCEABLE_KEYS) {
      if (!Object.hasOwn(own, key)) {
        const inherited = (input as Record<string, unknown>)[key]
        if (inherited !== undefined) own[key] = inherited
      }
    }
    return own
  })
  for (const key of EXPRESSION_KEYS) {
    const expression = snapshot[key]
    if (expression === undefined || expression === null) delete snapshot[key]
    else if (typeof expression !== 'string') throw new InvalidArgumentError(`input.${key} must be a string`)
  }
  for (const key of MAP_KEYS) {
    const map = snapshot[key]
    if (map === undefined || map === null) delete snapshot[key]
    else if (typeof map !== 'object') throw new InvalidArgumentError(`input.${key} must be an object`)
    else snapshot[key] = readOrRefuse(`input.${key}`, () => ({ ...map }))
  }
  return snapshot as unknown as FenceableSnapshot<T>
}

function readOrRefuse<T>(name: string, read: () => T): T {
  try {
    return read()
  } catch (error) {
    throw new InvalidArgumentError(`${name} could not be read`, { cause: error })
  }
}

/**
 * Fences your own `UpdateItem` or `PutItem` input: returns a copy whose condition also requires the
 * item's stored token to be at most `token` (or absent), and which writes `token` into the item in the
 * same request: a `SET` action added to the `UpdateExpression` (a `SET` clause is created if it has
 * none), or the attribute added to a `PutItem`'s `Item`. Your condition, names and values are kept; a
 * placeholder of yours that collides with the fence's (`#wlFence`, `:wlFence`) is refused, see
 * {@link FenceConditionOptions.placeholder}. The `SET` clause is found in any case, also written
 * without a space before its first path (`SET#total = :total`).
 *
 * Your input is read once: its properties, `Item` and the attribute maps are copied and only the
 * copies are used, so a getter or Proxy cannot show the helper one answer and the request another.
 * `InvalidArgumentError` for an input that cannot be read (a getter that throws) or has the wrong
 * types, and for a condition whose parentheses do not balance (`a) OR (b` would leave part of it
 * outside the `AND` with the fence).
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
  return fenceSnapshot(readFenceable(input), token, options)
}

/** {@link withFence} of an input already read by {@link readFenceable}; reads nothing else of the caller's. */
export function fenceSnapshot<T extends FenceableInput>(
  input: FenceableSnapshot<T>,
  token: bigint,
  options?: FenceConditionOptions,
): T {
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
  if (condition && !parenthesesBalance(condition)) {
    throw new InvalidArgumentError(
      'input.ConditionExpression has unbalanced parentheses: joined with the fence, part of it would not need the fence',
    )
  }
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
  if (!set) {
    merged.UpdateExpression = `SET ${fence.SetAction}${update ? ` ${update}` : ''}`
    return merged
  }
  const end = set.index + set[0].length
  merged.UpdateExpression = `${update.slice(0, end)} ${fence.SetAction}, ${update.slice(end).trimStart()}`
  return merged
}

// Your condition is joined as `(yours) AND fence`. One that closes more parentheses than it opens
// (`a) OR (b`) would read `(a) OR ((b) AND fence)`, a write that needs no fence when `a` holds.
// DynamoDB expressions have no string literals (values are placeholders), so every parenthesis in
// one is syntax and a count is exact.
function parenthesesBalance(expression: string): boolean {
  let depth = 0
  for (const character of expression) {
    if (character === '(') depth++
    else if (character === ')' && --depth < 0) return false
  }
  return depth === 0
}

function collision(placeholder: string): InvalidArgumentError {
  return new InvalidArgumentError(
    `the input already uses the placeholder ${placeholder}; pass another options.placeholder`,
  )
}
