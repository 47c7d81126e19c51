/**
 * @internal The last token a Leaser let go of, per workId, for at least the `capacity` workIds it let
 * go of last: older ones are forgotten, so memory stays bounded however many workIds pass through.
 *
 * Two generations of Maps, the older dropped whole once the newer holds `capacity` workIds, so no
 * entry is ever deleted: deleting and re-adding a workId on every release (to keep it last in one
 * Map) made that Map rehash every few releases, and V8 leaves each old table holding its entries (see
 * HeldLeases). Measured with `--trace-gc-nvp` over 200,000 acquires and releases at concurrency 16 on
 * the memory backend: 12 MB promoted to the old generation with the single Map, 4 MB with these two.
 * The cost is memory: up to twice `capacity` workIds remembered.
 *
 * ```ts
 * const retired = new RetiredTokens(100_000)
 * retired.retire('job-7', 12n)
 * retired.get('job-7') // 12n
 * ```
 */
export class RetiredTokens {
  readonly #capacity: number
  #recent = new Map<string, bigint>()
  #older = new Map<string, bigint>()

  constructor(capacity: number) {
    this.#capacity = capacity
  }

  /** The largest token let go of for `workId`, if it is still remembered. */
  get(workId: string): bigint | undefined {
    // A recent entry is never smaller than an older one: retire() only ever raises a workId's token.
    return this.#recent.get(workId) ?? this.#older.get(workId)
  }

  /**
   * Remembers `token` for `workId`, or the larger one remembered already: either way `workId` now
   * counts as let go of last.
   */
  retire(workId: string, token: bigint): void {
    const recent = this.#recent.get(workId)
    if (recent !== undefined && recent >= token) return
    const older = recent === undefined ? this.#older.get(workId) : undefined
    const kept = older !== undefined && older > token ? older : token
    if (recent === undefined && this.#recent.size >= this.#capacity) {
      this.#older = this.#recent
      this.#recent = new Map()
    }
    this.#recent.set(workId, kept)
  }
}
