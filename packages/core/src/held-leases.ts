/** What {@link HeldLeases} needs of a lease. */
interface Keyed {
  readonly workId: string
  readonly fencingToken: bigint
}

/**
 * The leases a Leaser holds, found by workId: deciding whether a token was already handed out must
 * not cost a walk over 100,000 leases on every acquire.
 */
export class HeldLeases<L extends Keyed> implements Iterable<L> {
  // A workId whose last lease went keeps its (empty) list until the empty ones are many: deleting it
  // at once would make the Map rehash every few releases while a steady few leases come and go, and
  // V8 leaves each old table holding the leases it had, so every released lease (with all it refers
  // to) would outlive its release until the next full collection (see ListenerList: 84 MB promoted over
  // 200,000 acquires and releases at concurrency 16 with the deletes, 12 MB without).
  readonly #byWorkId = new Map<string, L[]>()
  /** How many of those lists are empty. */
  #emptied = 0
  /** WorkIds more than one lease holds (one let go but still live in the store, and its successor). */
  #shared = 0

  add(lease: L): void {
    const same = this.#byWorkId.get(lease.workId)
    if (same === undefined) {
      this.#byWorkId.set(lease.workId, [lease])
      return
    }
    if (same.length === 0) this.#emptied--
    same.push(lease)
    if (same.length === 2) this.#shared++
  }

  delete(lease: L): void {
    const same = this.#byWorkId.get(lease.workId)
    const at = same?.indexOf(lease) ?? -1
    if (at < 0) return
    same!.splice(at, 1)
    if (same!.length === 1) this.#shared--
    else if (same!.length === 0 && ++this.#emptied > this.#byWorkId.size / 2 + EMPTIED_KEPT) this.#sweep()
  }

  /** Whether some workId is held by more than one of these leases. */
  get sharesWorkIds(): boolean {
    return this.#shared > 0
  }

  /** Whether a lease of `workId` holds `token` or a later one. */
  hasToken(workId: string, token: bigint): boolean {
    const same = this.#byWorkId.get(workId)
    return same?.some((lease) => lease.fencingToken >= token) ?? false
  }

  *[Symbol.iterator](): Iterator<L> {
    for (const same of this.#byWorkId.values()) yield* same
  }

  #sweep(): void {
    for (const [workId, same] of this.#byWorkId) if (same.length === 0) this.#byWorkId.delete(workId)
    this.#emptied = 0
  }
}

// Empty lists kept beyond half the map's size: a few thousand short strings and empty arrays at most.
const EMPTIED_KEPT = 1_024
