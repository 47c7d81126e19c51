// Session bookkeeping the driver adds to every command, the same on both sides.
const BOOKKEEPING = new Set(['lsid', '$db', '$clusterTime', 'txnNumber', '$readPreference', 'apiVersion'])

/**
 * A command as the bench compares it between the driver and its baseline: every field name in
 * order, operators included, and in place of each value its BSON type (an int64, an int32 and a
 * double are different commands on the wire); booleans stay, they are part of a filter's meaning.
 * The collection's name becomes `<collection>`.
 *
 * ```ts
 * mongoCommandShape('update', { update: 'leases_1f', updates: [{ q: { _id: 'a' }, u: { $set: { n: 1n } } }] })
 * // 'update <collection> updates:[{q:{_id:<string>},u:{$set:{n:<int64>}}}]'
 * ```
 */
export function mongoCommandShape(commandName: string, command: Record<string, unknown>): string {
  const fields = Object.entries(command)
    .filter(([name]) => name !== commandName && !BOOKKEEPING.has(name))
    .map(([name, value]) => `${name}:${shapeOf(value)}`)
  return [commandName, '<collection>', ...fields].join(' ')
}

function shapeOf(value: unknown): string {
  if (value === null || value === undefined) return String(value)
  switch (typeof value) {
    case 'boolean':
      return String(value)
    case 'bigint':
      return '<int64>'
    case 'string':
      return '<string>'
    case 'number':
      return Number.isInteger(value) && Math.abs(value) < 2 ** 31 ? '<int32>' : '<double>'
  }
  if (value instanceof Date) return '<date>'
  if (value instanceof Uint8Array) return '<binary>'
  const bsonType = (value as { _bsontype?: unknown })._bsontype
  if (typeof bsonType === 'string') return `<${bsonType}>`
  if (Array.isArray(value)) return `[${value.map(shapeOf).join(',')}]`
  const entries = Object.entries(value as Record<string, unknown>)
  return `{${entries.map(([name, field]) => `${name}:${shapeOf(field)}`).join(',')}}`
}
