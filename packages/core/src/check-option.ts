import { InvalidArgumentError } from '@worklease/spec'
import { DEFAULT_RETRY, type ResolvedRetryPolicy, type RetryPolicy } from './retry-policy.js'

/** @internal The one check every numeric option goes through, so every message reads the same. */
export function checkNumber(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new InvalidArgumentError(`${name} must be a number in ${min}..${max}, got ${String(value)}`)
  }
  return value
}

/** @internal The one check every on/off option goes through; `undefined` takes the default. */
export function checkBoolean(name: string, value: unknown, defaultValue: boolean): boolean {
  if (value === undefined) return defaultValue
  if (typeof value !== 'boolean') {
    throw new InvalidArgumentError(`${name} must be true or false, got ${String(value)}`)
  }
  return value
}

/** @internal A retry policy with defaults filled in (`defaults` for the rest), checked. */
export function resolveRetry(
  retry: RetryPolicy | undefined,
  name = 'retry',
  defaults: ResolvedRetryPolicy = DEFAULT_RETRY,
): ResolvedRetryPolicy {
  const policy = { ...defaults, ...retry }
  checkNumber(`${name}.initialDelayMs`, policy.initialDelayMs, 0, 2_147_483_647)
  checkNumber(`${name}.maxDelayMs`, policy.maxDelayMs, policy.initialDelayMs, 2_147_483_647)
  checkNumber(`${name}.multiplier`, policy.multiplier, 1, 1_000)
  if (!Number.isSafeInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new InvalidArgumentError(
      `${name}.maxAttempts must be a positive integer, got ${policy.maxAttempts}`,
    )
  }
  return Object.freeze(policy)
}
