/**
 * The smallest string greater than every string that starts with `prefix`, in code point order (the
 * UTF-8 byte order MongoDB compares strings in under the simple collation), or `undefined` when no
 * such string exists (`prefix` is empty or all U+10FFFF). `{ $gte: prefix, $lt: bound }` on `_id` is
 * then exactly "starts with `prefix`", as index bounds, with no pattern to escape.
 */
export function prefixUpperBound(prefix: string): string | undefined {
  const codePoints = Array.from(prefix, (char) => char.codePointAt(0)!)
  // A last code point of U+10FFFF cannot be incremented: every string starting with the prefix also
  // starts with the shorter one, so drop it and increment the one before.
  while (codePoints.length > 0 && codePoints.at(-1)! >= 0x10ffff) codePoints.pop()
  if (codePoints.length === 0) return undefined
  const last = codePoints.pop()! + 1
  // Surrogates are not characters (UTF-8 cannot carry them); the next one up is U+E000.
  codePoints.push(last === 0xd800 ? 0xe000 : last)
  return String.fromCodePoint(...codePoints)
}
