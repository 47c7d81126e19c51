import type { Check, FinalItem } from './audit.js'
import { completedCheck, readDownstream, staleCheck } from './audit-downstream.js'
import type { HistoryEntry } from './downstream.js'
import type { PoolRunOutcome } from './pool-coordinator.js'
import type { PoolRun } from './reduce-pool.js'

export interface PoolAuditInput {
  steps: number
  outcome: PoolRunOutcome
  final: FinalItem[]
  histories: Map<string, HistoryEntry[]>
}

const byToken = (a: PoolRun, b: PoolRun) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0)

/**
 * The `--pool` demo's verdict: what the stores hold (items read back through the lease store, the
 * downstream's accepted writes in order) and what the workers reported (each run of an item, from
 * its handler's start to its end; a killed worker's runs end at the kill).
 */
export function auditPool({ steps, outcome, final, histories }: PoolAuditInput): Check[] {
  const checks: Check[] = []
  const { state } = outcome
  checks.push(completedCheck(final, steps))

  const killedTokens = new Set(
    state.runs.filter((run) => run.end?.how === 'killed').map((run) => `${run.item} ${run.token}`),
  )
  const reading = readDownstream(histories)
  let missing = 0
  let duplicated = 0
  let redone = 0
  for (const [item, byStep] of reading.byItem) {
    for (let step = 1; step <= steps; step++) {
      const entries = byStep.get(step) ?? []
      if (entries.length === 0) missing++
      // A step written but not yet checkpointed when its worker was killed is written again by the
      // successor: expected. Any other second write is a duplicate.
      for (const entry of entries.slice(0, -1)) {
        if (killedTokens.has(`${item} ${entry.token}`)) redone++
        else duplicated++
      }
    }
  }
  const expected = histories.size * steps
  checks.push({
    name: 'every step result written, once',
    pass: missing === 0 && duplicated === 0 && histories.size === final.length,
    detail: `${expected - missing}/${expected} steps in the downstream table, ${missing} missing, ${duplicated} written twice, ${redone} redone after the crash (written, not checkpointed)`,
  })
  checks.push(staleCheck(reading))

  let overlaps = 0
  const overlapExamples: string[] = []
  let lostCheckpoints = 0
  const lostExamples: string[] = []
  const handoffs = { consent: 0, consentClean: 0, crash: 0, crashUnclean: 0, killedMidRelease: 0 }
  const killed = (worker: string) => state.workers[worker]?.status === 'killed'
  const items = new Map<string, PoolRun[]>()
  for (const run of state.runs) items.set(run.item, [...(items.get(run.item) ?? []), run])
  for (const [item, runs] of items) {
    const ordered = [...runs].sort(byToken)
    for (let i = 1; i < ordered.length; i++) {
      const before = ordered[i - 1]!
      const after = ordered[i]!
      // A give-up by consent must end the run before the release lets anyone take the item. After an
      // expiry (a crash, or a worker too slow to renew) the old run may still be going: that one is
      // the fence's job, checked above on the downstream's writes.
      if (before.end?.how === 'consent' && after.startedAt < before.end.at) {
        overlaps++
        overlapExamples.push(
          `${item}: ${before.worker} token ${before.token} and ${after.worker} token ${after.token}`,
        )
      }
      // The successor resumes from the last step its predecessor checkpointed, or later (a killed
      // worker's last checkpoint may have landed without its report).
      const resumedOk =
        before.end?.how === 'killed'
          ? after.resumedAt >= before.checkpointed
          : after.resumedAt === before.checkpointed
      if (!resumedOk) {
        lostCheckpoints++
        lostExamples.push(
          `${item}: ${before.worker} checkpointed step ${before.checkpointed}, ${after.worker} resumed after ${after.resumedAt}`,
        )
      }
      if (before.end?.how === 'consent' && !before.released && killed(before.worker)) {
        // Killed between giving the item up and reporting its release: whether the release landed
        // first is the store's to say, and either handoff is right.
        handoffs.killedMidRelease++
      } else if (before.end?.how === 'consent') {
        handoffs.consent++
        if (after.cleanHandoff) handoffs.consentClean++
      } else if (before.end?.how === 'killed') {
        handoffs.crash++
        if (!after.cleanHandoff) handoffs.crashUnclean++
      }
    }
  }
  const expired = state.runs.length - items.size - handoffs.consent
  checks.push({
    name: 'no item run by two workers at once',
    pass: overlaps === 0 && reading.stale === 0,
    detail:
      overlaps === 0
        ? `${handoffs.consent} consent handoffs: each successor started after its predecessor's run ended; ${expired} takeovers after an expiry: no write of the old token accepted after the new claim`
        : `${overlaps} overlapping runs: ${overlapExamples.slice(0, 3).join('; ')}`,
  })
  checks.push({
    name: 'no checkpoint lost in a handoff',
    pass: lostCheckpoints === 0,
    detail:
      lostCheckpoints === 0
        ? `every successor resumed from its predecessor's last checkpoint (${state.runs.length - items.size} handoffs)`
        : `${lostCheckpoints} handoffs resumed from the wrong step: ${lostExamples.slice(0, 3).join('; ')}`,
  })

  const joined = Object.values(state.workers).filter((worker) => worker.role === 'joined')
  const left = outcome.changes.find((change) => change.action === 'leave')
  const crashed = outcome.changes.find((change) => change.action === 'crash')
  checks.push({
    name: 'joining workers took items by consent',
    pass: joined.length > 0 && joined.every((worker) => worker.consentTaken > 0),
    detail:
      joined.length === 0
        ? 'no worker joined (the run ended first)'
        : joined
            .map((worker) => `${worker.name} took ${worker.consentTaken} by consent (${worker.taken} in all)`)
            .join(', '),
  })
  // The leaver's runs still open when it was told to leave all ended by consent (released) or done:
  // a leave that dropped an item, to be taken after its ttl, is no clean leave whatever others saw.
  const leaver = left?.workers?.[0]
  const leavingAt = leaver === undefined ? undefined : state.workers[leaver]?.leavingAt
  const leaverRuns = state.runs.filter(
    (run) => run.worker === leaver && !(leavingAt !== undefined && run.end && run.end.at < leavingAt),
  )
  const leftUnclean = leaverRuns.filter(
    (run) => !(run.end?.how === 'done' || (run.end?.how === 'consent' && run.released)),
  )
  checks.push({
    name: 'every consent handoff clean',
    pass:
      handoffs.consent > 0 &&
      handoffs.consentClean === handoffs.consent &&
      left?.at !== undefined &&
      leftUnclean.length === 0,
    detail:
      `${handoffs.consentClean}/${handoffs.consent} items given up (rebalances${leaver ? `, ${leaver} leaving` : ''}) were taken with cleanHandoff true` +
      (leftUnclean.length > 0
        ? `; ${leaver} left ${leftUnclean.length} items without releasing them: ${leftUnclean
            .slice(0, 3)
            .map((run) => `${run.item} (${run.end?.how ?? 'no end reported'})`)
            .join(', ')}`
        : '') +
      (handoffs.killedMidRelease > 0
        ? `; ${handoffs.killedMidRelease} given up by a worker killed before its release was reported`
        : ''),
  })
  checks.push({
    name: 'crashed worker: unclean handoffs',
    pass: handoffs.crash > 0 && handoffs.crashUnclean === handoffs.crash,
    detail: !crashed?.workers
      ? 'no worker was killed (the run ended first)'
      : `${crashed.workers[0]}'s ${handoffs.crash} items were taken after the ttl, ${handoffs.crashUnclean} with cleanHandoff false`,
  })
  checks.push({
    name: 'run finished, no worker failed',
    pass: !outcome.timedOut && state.failures.length === 0,
    detail: outcome.timedOut
      ? 'timed out'
      : state.failures.length
        ? state.failures.map((failure) => failure.split('\n')[0]).join('; ')
        : `${Object.keys(state.workers).length} workers started, ${(outcome.elapsedMs / 1000).toFixed(1)} s`,
  })
  return checks
}
