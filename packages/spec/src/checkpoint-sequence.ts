let last = 0

/**
 * A checkpoint sequence (see `CheckpointOptions.sequence`) larger than every one this process drew
 * before: the wall clock in microseconds, or the previous value + 1 when the clock has not moved on
 * (or went back). Seeding from the wall clock keeps sequences increasing across the processes one
 * record may pass through, as long as their clocks agree to within the time between two checkpoints.
 *
 * ```ts
 * const sequence = nextCheckpointSequence()
 * await backend.checkpoint(record, state, 30_000, { sequence })
 * ```
 */
export function nextCheckpointSequence(): number {
  last = Math.max(last + 1, Date.now() * 1000)
  return last
}
