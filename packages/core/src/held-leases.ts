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
  readonly #byWorkId = new Map<string, L[]>()
  /** WorkIds more than one lease holds (one let go but still live in the store, and its successor). */
  #shared = 0

  add(lease: L): void {
    const same = this.#byWorkId.get(lease.workId)
    if (same) {
      same.push(lease)
      if (same.length === 2) this.#shared++
    } else {
      this.#byWorkId.set(lease.workId, [lease])
    }
  }

  delete(lease: L): void {
    const same = this.#byWorkId.get(lease.workId)
    const at = same?.indexOf(lease) ?? -1
    if (at < 0) return
    if (same!.length === 1) this.#byWorkId.delete(lease.workId)
    else {
      same!.splice(at, 1)
      if (same!.length === 1) this.#shared--
    }
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
}
