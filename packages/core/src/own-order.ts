/** FNV-1a: a cheap, stable spread, so members trying to take free units start at different ones. */
function spread(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return hash >>> 0
}

/**
 * @internal The first `count` of `items` in a member's own order of them, by a hash of its holderId and
 * each one's id: members taking from the same free units start at different ones, and a member gives
 * back first the units it would take last (`'giveUp'`). Each id is hashed once and only `count` are
 * kept in order: with a million units free, a comparator that hashed as it went blocked the event loop
 * for 6.2 s (7.8 s the whole rebalance; found by a review, session 51), long enough to miss a renewal.
 */
export function firstInOwnOrder<T>(
  items: readonly T[],
  idOf: (item: T) => string,
  holderId: string,
  count: number,
  order: 'take' | 'giveUp' = 'take',
): T[] {
  const n = items.length
  const wanted = Math.max(0, Math.min(count, n))
  if (wanted === 0) return []
  const keys = new Float64Array(n)
  const sign = order === 'take' ? 1 : -1
  for (let i = 0; i < n; i++) keys[i] = sign * spread(holderId + idOf(items[i]!))
  // Ties in the order the items came in, as a stable sort kept them.
  const before = (a: number, b: number) => keys[a]! - keys[b]! || a - b
  const chosen = wanted * 8 >= n ? [...keys.keys()].sort(before) : firstOf(n, wanted, before)
  return chosen.slice(0, wanted).map((i) => items[i]!)
}

/** The `wanted` first of the indices 0..n-1 by `before`, through a heap: n log(wanted), not n log n. */
function firstOf(n: number, wanted: number, before: (a: number, b: number) => number): number[] {
  // A max-heap of the first so far: its root is the last of them, and gives way to any index before it.
  const heap: number[] = []
  const swap = (i: number, j: number) => {
    const held = heap[i]!
    heap[i] = heap[j]!
    heap[j] = held
  }
  for (let index = 0; index < n; index++) {
    if (heap.length < wanted) {
      heap.push(index)
      for (let i = heap.length - 1; i > 0 && before(heap[(i - 1) >> 1]!, heap[i]!) < 0; i = (i - 1) >> 1) {
        swap(i, (i - 1) >> 1)
      }
    } else if (before(index, heap[0]!) < 0) {
      heap[0] = index
      for (let i = 0; ; ) {
        const left = 2 * i + 1
        let last = i
        if (left < wanted && before(heap[left]!, heap[last]!) > 0) last = left
        if (left + 1 < wanted && before(heap[left + 1]!, heap[last]!) > 0) last = left + 1
        if (last === i) break
        swap(i, last)
        i = last
      }
    }
  }
  return heap.sort(before)
}
