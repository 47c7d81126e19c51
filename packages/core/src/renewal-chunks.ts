import type { LeaseRecord } from '@worklease/spec'

/**
 * @internal Cuts the leases of one batch into calls of at most `maxRecords`, in one pass as they
 * come. A workId already in the chunk being filled (a repeat, which the contract refuses in one call)
 * waits for a call after these; only when `mayRepeat` is the chunk's Set of workIds kept at all
 * (with 100,000 leases, those Sets and a list of every lease were a fifth of what a batch allocated).
 */
export class RenewalChunks<L extends { readonly record: LeaseRecord }> {
  readonly #maxRecords: number
  readonly #send: (chunk: L[]) => void
  #chunk: L[] = []
  #workIds: Set<string> | undefined
  #repeats: L[] | undefined

  constructor(maxRecords: number, mayRepeat: boolean, send: (chunk: L[]) => void) {
    this.#maxRecords = maxRecords
    this.#send = send
    if (mayRepeat) this.#workIds = new Set()
  }

  add(lease: L): void {
    const workIds = this.#workIds
    if (workIds !== undefined) {
      const { workId } = lease.record
      if (workIds.has(workId)) {
        if (this.#repeats === undefined) this.#repeats = [lease]
        else this.#repeats.push(lease)
        return
      }
      workIds.add(workId)
    }
    this.#chunk.push(lease)
    if (this.#chunk.length === this.#maxRecords) {
      this.#send(this.#chunk)
      this.#chunk = []
      this.#workIds?.clear()
    }
  }

  /** Sends what is left: the last chunk, then the repeats, cut the same way. */
  flush(): void {
    if (this.#chunk.length > 0) this.#send(this.#chunk)
    this.#chunk = []
    const repeats = this.#repeats
    if (repeats === undefined) return
    const next = new RenewalChunks(this.#maxRecords, true, this.#send)
    for (const lease of repeats) next.add(lease)
    next.flush()
  }
}
