/** The `q` quantile (0..1) of `values` by nearest rank; `NaN` when empty. Sorts a copy. */
export function quantile(values: ArrayLike<number>, q: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = Float64Array.from(values).sort()
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[rank]!
}

/**
 * The `q` quantile (0..1) of `values` where `values[i]` stands for `weights[i]` observations, by
 * nearest rank: the smallest value whose cumulative weight reaches `q` of the total. With every
 * weight 1 it is {@link quantile}. `NaN` when empty.
 */
export function weightedQuantile(values: ArrayLike<number>, weights: ArrayLike<number>, q: number): number {
  if (values.length !== weights.length) throw new Error('weightedQuantile: one weight per value')
  if (values.length === 0) return Number.NaN
  const order = Uint32Array.from({ length: values.length }, (_, i) => i).sort(
    (a, b) => values[a]! - values[b]!,
  )
  let total = 0
  for (let i = 0; i < weights.length; i++) total += weights[i]!
  const target = q * total
  let cumulative = 0
  for (const index of order) {
    cumulative += weights[index]!
    if (cumulative >= target) return values[index]!
  }
  return values[order[order.length - 1]!]!
}

/** The middle value, or the mean of the two middle values of an even count. */
export function median(values: ArrayLike<number>): number {
  if (values.length === 0) return Number.NaN
  const sorted = Float64Array.from(values).sort()
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** Median, minimum and maximum: the spread of a handful of repetitions, without pretending to a distribution. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
}

export function spread(values: readonly number[]): Spread {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) }
}

/** Rounds to `digits` significant digits, for JSON that stays readable. */
export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value) || value === 0) return value
  return Number(value.toPrecision(digits))
}
