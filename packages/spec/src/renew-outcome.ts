/**
 * What {@link Backend.renewMany} says about one record, in the order of its input:
 *
 * - `'renewed'`: the record is valid and its lease now expires at least `ttl` after a moment inside
 *   the call (`max(stored, now + ttl)`: never sooner than it did), exactly what a successful `renew`
 *   promises.
 * - `'expired'`: the record is valid but its lease expired, so it was left alone (`renew` throws
 *   `LeaseExpiredError` then). A successor may take it at any moment.
 * - `'fenced'`: the record is not valid: taken over, released or revoked (`renew` throws
 *   `FencedError` then). Nothing changed for it.
 *
 * ```ts
 * const outcomes = await backend.renewMany(records, 30_000)
 * const lost = records.filter((_, i) => outcomes[i] !== 'renewed')
 * ```
 */
export type RenewOutcome = 'renewed' | 'expired' | 'fenced'
