/**
 * A DynamoDB request as the bench compares it between the driver and its baseline: the operation,
 * every expression as written, the attribute names each placeholder stands for, the type of each
 * value (`N`, `S`, `B`, `BOOL`), and the other parameters as sent. Placeholders are sorted (their
 * order in the maps means nothing); the table's name becomes `<table>`.
 *
 * ```ts
 * dynamoRequestShape('GetItemCommand', { TableName: 't', Key: { workId: { S: 'a' } }, ConsistentRead: true })
 * // 'GetItemCommand <table> ConsistentRead:true Key:{workId:S}'
 * ```
 */
export function dynamoRequestShape(commandName: string, input: Record<string, unknown>): string {
  const fields = Object.entries(input)
    .filter(([name]) => name !== 'TableName')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}:${shapeOf(name, value)}`)
  return [commandName, '<table>', ...fields].join(' ')
}

function shapeOf(name: string, value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value)
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  )
  // Attribute values: their type only; names: what each placeholder stands for.
  const typed = name === 'Key' || name === 'ExpressionAttributeValues'
  return `{${entries
    .map(
      ([field, inner]) =>
        `${field}:${typed ? Object.keys(inner as object).join('|') : JSON.stringify(inner)}`,
    )
    .join(',')}}`
}
