import type { Check, FinalItem } from './audit.js'
import type { HistoryEntry } from './downstream.js'

/** The downstream table's accepted writes, read in order against each item's fence. */
export interface DownstreamReading {
  readonly writes: number
  /** Writes accepted with a token older than one that had already claimed or written the item. */
  readonly stale: number
  readonly staleExamples: readonly string[]
  /** Per item, the accepted writes of each step, in the order they landed. */
  readonly byItem: ReadonlyMap<string, ReadonlyMap<number, readonly HistoryEntry[]>>
}

export function readDownstream(histories: Map<string, HistoryEntry[]>): DownstreamReading {
  let writes = 0
  let stale = 0
  const staleExamples: string[] = []
  const byItem = new Map<string, Map<number, HistoryEntry[]>>()
  for (const [item, history] of histories) {
    const byStep = new Map<number, HistoryEntry[]>()
    byItem.set(item, byStep)
    let fence = 0n
    for (const entry of history) {
      if (entry.kind === 'claim') {
        if (entry.token > fence) fence = entry.token
        continue
      }
      writes++
      byStep.set(entry.step, [...(byStep.get(entry.step) ?? []), entry])
      // Stale: a newer holder had already claimed the item (or written to it) when this write landed.
      if (entry.token < fence) {
        stale++
        staleExamples.push(`${item} step ${entry.step} token ${entry.token} after token ${fence}`)
      } else fence = entry.token
    }
  }
  return { writes, stale, staleExamples, byItem }
}

/** Every item at its last step, as read back through the lease store. */
export function completedCheck(final: readonly FinalItem[], steps: number): Check {
  const notComplete = final.filter((item) => item.stepsDone !== steps)
  return {
    name: 'every item completed',
    pass: notComplete.length === 0,
    detail:
      `${final.length - notComplete.length}/${final.length} items at step ${steps}/${steps}, read back through the lease store` +
      (notComplete.length
        ? `; not: ${notComplete.map((item) => `${item.item} (${item.error ?? `${item.stepsDone ?? 0}/${steps}`})`).join(', ')}`
        : ''),
  }
}

export function staleCheck(reading: DownstreamReading): Check {
  return {
    name: 'no step accepted from a stale token',
    pass: reading.stale === 0,
    detail:
      reading.stale === 0
        ? `every one of ${reading.writes} accepted writes carried the item's newest token`
        : `${reading.stale} stale writes accepted: ${reading.staleExamples.slice(0, 3).join('; ')}`,
  }
}
