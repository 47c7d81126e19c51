/** The `q` quantile (0..1) of `values` by nearest rank; `NaN` when empty. Sorts a copy. */
export function quantile(values: ArrayLike<number>, q: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = Float64Array.from(values).sort()
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[rank]!
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
