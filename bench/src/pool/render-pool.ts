import type { BenchResults } from '../results.js'
import type { PoolFleetResult } from './measure-pool-fleet.js'
import { phaseGoals } from './phase-goals.js'

const verdict = (pass: boolean | undefined) => (pass === undefined ? 'n/a' : pass ? 'pass' : '**FAIL**')
const handoffs = (good: number, all: number) =>
  `${good}/${all} ${verdict(all === 0 ? undefined : good === all)}`

/** The pool section of latest.md: one table row per store and change, then the run-wide checks. */
export function renderPool(results: BenchResults): string[] {
  const runs = results.pool
  if (!runs || runs.length === 0) return []
  const out = ['## LeasePool fleet (real processes)', '']
  const first = runs.find((run): run is PoolFleetResult => !('error' in run))
  if (first) {
    out.push(
      `${first.units.toLocaleString('en')} units; ${first.members} member processes (each its own \`Leaser\` and ` +
        `\`LeasePool\`, default options; each has loaded and opened its store connections before a phase starts, as a service's startup check leaves it) start together, ${first.joining} join, then ${first.killed} are SIGKILLed; ` +
        `ttl ${first.ttlMs} ms, renew (and rebalance) interval ${first.renewIntervalMs} ms. ` +
        'The default ttl is 6 s since session 11: at 3 s the PostgreSQL join measured this shared 2-core machine, not ' +
        'the protocol (15 member processes and the server on 2 cores took 150-350 ms a statement while 330 units were ' +
        'handed back, a checkpoint and a release each, 4 at a time per donor): 4.7-5.7 s (4.7-5.7 intervals) in three ' +
        'runs, with the code before and after that session’s changes alike, where every donor had seen the joiners ' +
        'within 1.4 s; at 6 s, 4.4-5.2 s (2.2-2.6 intervals). `--pool-ttl 3000` measures it again. Converged: every unit held ' +
        'by a live member and none holding more than ceil(N/W) + 1, timed from the change to the member-stamped report ' +
        'that completed it. Goals (issue 18): within 3 renew intervals (after a crash, plus the ttl); moves (takes until ' +
        'no take for two renew intervals) ≤ 1.2 × the minimum (units no live member holds + units above ceil(N/W)). ' +
        'Overlaps: after a give-up by consent, a successor\u2019s handler starting before the giver\u2019s ended (start/end ' +
        'stamped by the members); token errors: two members with one token for a unit (the store\u2019s one-holder rule). ' +
        'After an expiry (a kill, or a lease lost by a late renewal) a starved holder may notice after its successor ' +
        'started: counted apart, as that is what fencing tokens are for. ' +
        'Handoffs: `readCheckpoint().cleanHandoff` of each ' +
        'successor. "store" compares the reports with a `backend.list` of the group once the fleet is quiet.',
      '',
    )
  }
  out.push(
    '| store | change | converged ms (renew intervals) | goal ms | | moves / minimum | | units per member | store held / mismatches | units lost | longest stall ms |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  )
  for (const run of runs) {
    if ('error' in run) {
      out.push(`| ${run.store} | failed: ${run.error} | | | | | | | | | |`)
      continue
    }
    for (const phase of run.phases) {
      const goals = phaseGoals(phase)
      const ratio = phase.minimumMoves > 0 ? (phase.moves / phase.minimumMoves).toFixed(2) : '-'
      out.push(
        `| ${run.store} | ${phase.description} | ${phase.convergedMs ?? 'never'} (${phase.convergedRenewIntervals ?? '-'}) | ` +
          `${phase.goalMs} | ${verdict(goals.converged)} | ${phase.moves} / ${phase.minimumMoves} (${ratio}x) | ` +
          `${verdict(goals.moves)} | ${phase.finalMin}..${phase.finalMax} | ${phase.storeHeld} / ${phase.storeMismatches} | ${phase.losses} | ${phase.maxEventLoopDelayMs} |`,
      )
    }
  }
  out.push(
    '',
    '| store | server | overlaps | consent handoffs clean | crash handoffs unclean | losses (by reason) / successors before the loser noticed / rebalance failures | seconds |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  )
  for (const run of runs) {
    if ('error' in run) continue
    const { audit } = run
    out.push(
      `| ${run.store} | ${run.server} | ${audit.overlaps} ${verdict(audit.overlaps === 0 && audit.tokenErrors === 0)} | ` +
        `${handoffs(audit.consentClean, audit.consentHandoffs)} | ${handoffs(audit.crashUnclean, audit.crashHandoffs)} | ` +
        `${run.losses} (${
          Object.entries(run.lossReasons ?? {})
            .map(([why, n]) => `${n} ${why}`)
            .join(', ') || 'none'
        }) / ${audit.lateLossEnds} / ${run.rebalanceFailures} | ${run.seconds} |`,
    )
  }
  out.push('')
  return out
}
