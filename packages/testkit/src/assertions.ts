import type { ErrorCode } from '@worklease/spec'
import { isWorkleaseError } from '@worklease/spec'

/** Thrown when a backend breaks the contract; the message says which rule and what happened. */
export class ContractViolation extends Error {
  override name = 'ContractViolation'
}

export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ContractViolation(message)
}

function show(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`
  if (value instanceof Uint8Array) return `Uint8Array(${value.byteLength})`
  if (value instanceof Date) return `Date(${value.toISOString()})`
  if (value instanceof Error)
    return `${value.name}(${(value as { code?: unknown }).code ?? ''}): ${value.message}`
  try {
    return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)) ?? String(value)
  } catch {
    return String(value)
  }
}

export function checkEqual<T>(actual: T, expected: T, what: string): void {
  if (!Object.is(actual, expected)) {
    throw new ContractViolation(`${what}: expected ${show(expected)}, got ${show(actual)}`)
  }
}

export function checkBytes(actual: Uint8Array | null, expected: Uint8Array | null, what: string): void {
  if (expected === null || actual === null) {
    if (actual !== expected)
      throw new ContractViolation(`${what}: expected ${show(expected)}, got ${show(actual)}`)
    return
  }
  check(actual instanceof Uint8Array, `${what}: expected a Uint8Array, got ${show(actual)}`)
  checkEqual(actual.byteLength, expected.byteLength, `${what} (length)`)
  for (let i = 0; i < expected.byteLength; i++) {
    if (actual[i] !== expected[i]) {
      throw new ContractViolation(`${what}: byte ${i} is ${actual[i]}, expected ${expected[i]}`)
    }
  }
}

/** Runs `action` and returns the error it rejects with, or fails if it resolves. */
export async function rejection(action: () => Promise<unknown>, what: string): Promise<unknown> {
  try {
    await action()
  } catch (error) {
    return error
  }
  throw new ContractViolation(`${what}: expected an error, but it succeeded`)
}

/** `action` must reject with a worklease error carrying `code`. */
export async function checkRejects(
  action: () => Promise<unknown>,
  code: ErrorCode,
  what: string,
): Promise<void> {
  const error = await rejection(action, what)
  if (!isWorkleaseError(error, code)) {
    throw new ContractViolation(`${what}: expected ${code}, got ${show(error)}`, { cause: error })
  }
  check(error instanceof Error, `${what}: ${code} must be thrown as an Error`)
}

/** Runs `action`, returning `'ok'` or the worklease error code it failed with; other errors propagate. */
export async function outcome(action: () => Promise<unknown>): Promise<'ok' | ErrorCode> {
  try {
    await action()
    return 'ok'
  } catch (error) {
    if (isWorkleaseError(error)) return error.code
    throw error
  }
}

export { show }
