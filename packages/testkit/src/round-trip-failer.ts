/**
 * The switch behind a harness's `failNextCall`: the harness asks {@link take} before each round trip
 * to the store and, when it answers true, fails that round trip before it is sent, as the store's
 * client fails one on a broken connection.
 *
 * ```ts
 * const failer = new RoundTripFailer()
 * // in the client's command hook, before the command goes out:
 * if (failer.take()) throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' })
 * // in the harness:
 * failNextCall: (skipRoundTrips) => failer.failNextCall(skipRoundTrips),
 * ```
 */
export class RoundTripFailer {
  #skip: number | undefined

  /** Fails the round trip after `skipRoundTrips` more (default 0: the next one), once. */
  failNextCall(skipRoundTrips = 0): void {
    if (!Number.isSafeInteger(skipRoundTrips) || skipRoundTrips < 0) {
      throw new RangeError(`skipRoundTrips must be a non-negative integer, got ${String(skipRoundTrips)}`)
    }
    this.#skip = skipRoundTrips
  }

  /** Whether the round trip about to be sent fails. */
  take(): boolean {
    if (this.#skip === undefined) return false
    if (this.#skip > 0) {
      this.#skip--
      return false
    }
    this.#skip = undefined
    return true
  }
}
