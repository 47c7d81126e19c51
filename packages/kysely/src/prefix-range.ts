/**
 * The smallest string greater than every string that starts with `prefix`, in code point order (the
 * byte order of UTF-8, which is how the lease table's binary-collated id columns compare): the prefix
 * with its last code point incremented, skipping the surrogate range, and carrying past U+10FFFF.
 * `undefined` when no such string exists (a prefix of U+10FFFF only): then there is no upper bound.
 * A range `prefix <= id < bound` lets the primary key index find a prefix's ids without LIKE, whose
 * wildcards and case rules differ per database.
 */
export function prefixUpperBound(prefix: string): string | undefined {
  const points = [...prefix].map((char) => char.codePointAt(0)!)
  while (points.length > 0) {
    const next = points.pop()! + 1
    if (next > 0x10ffff) continue
    points.push(next >= 0xd800 && next <= 0xdfff ? 0xe000 : next)
    return String.fromCodePoint(...points)
  }
  return undefined
}
