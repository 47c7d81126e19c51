import { isInvalidArgumentError, validateId } from '@worklease/spec'
import { InvalidArgumentError } from 'commander'

/**
 * A commander argument parser for a workId (or, with `emptyMeansAll`, a prefix of workIds, where ''
 * lists everything), checked as every backend checks one: a usage error before the store is opened,
 * not a query for an id no lease can have.
 */
export function idArgument(name: string, { emptyMeansAll = false } = {}): (value: string) => string {
  return (value) => {
    if (emptyMeansAll && value === '') return value
    try {
      validateId(name, value)
    } catch (error) {
      if (isInvalidArgumentError(error)) throw new InvalidArgumentError(error.message)
      throw error
    }
    return value
  }
}
