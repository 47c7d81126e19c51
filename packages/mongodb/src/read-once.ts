import { InvalidArgumentError } from '@worklease/spec'
import type { LeaseDocumentLike } from './lease-collection.js'

/**
 * A shallow copy of a caller's document, each own property read once. The helpers check and send
 * only the copy, so a getter or Proxy that would answer differently on a second read cannot make them
 * send something other than what they checked; one that throws is the caller's bad argument.
 */
export function snapshotDocument(value: unknown, name: string, shape = 'a document'): LeaseDocumentLike {
  let copy: LeaseDocumentLike | undefined
  try {
    // Array.isArray and the spread both run a Proxy's traps, which may throw.
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) copy = { ...value }
  } catch (error) {
    throw new InvalidArgumentError(`${name} could not be read: ${describeError(error)}`, { cause: error })
  }
  if (copy === undefined) throw new InvalidArgumentError(`${name} must be ${shape}`)
  return copy
}

/** A copy of an array a caller gave, each element read once; `undefined` when it is not an array. */
export function snapshotArray(value: unknown, name: string): unknown[] | undefined {
  try {
    return Array.isArray(value) ? Array.prototype.slice.call(value) : undefined
  } catch (error) {
    throw new InvalidArgumentError(`${name} could not be read: ${describeError(error)}`, { cause: error })
  }
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
