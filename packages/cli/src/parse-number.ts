import { InvalidArgumentError } from 'commander'
import { quoted } from './lease-row.js'

/**
 * The longest delay Node's timers keep: a longer one is cut to 1 ms with a TimeoutOverflowWarning,
 * which would turn a "wait a month" into a loop hammering the store.
 */
export const LONGEST_TIMER_MS = 2 ** 31 - 1

/** A commander option parser for a whole number in 1..max, with a message that names the option. */
export function positiveInteger(name: string, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    const number = Number(value)
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(number) || number < 1 || number > max) {
      throw new InvalidArgumentError(`${name} takes a whole number in 1..${max}, got ${quoted(value)}`)
    }
    return number
  }
}
