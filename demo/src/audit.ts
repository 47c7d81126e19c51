import { completedCheck, readDownstream, staleCheck } from './audit-downstream.js'
import type { RunOutcome } from './coordinator.js'
import type { HistoryEntry } from './downstream.js'
import type { PlannedStrike, Strike } from './reduce-run.js'

/** An item as read back through the lease store after the run. */
export interface FinalItem {
  item: string
  stepsDone: number | undefined
  token: bigint | undefined
  error?: string
}

export interface Check {
  name: string
  pass: boolean
  detail: string
}

export interface AuditInput {
  steps: number
  outcome: RunOutcome
  final: FinalItem[]
  histories: Map<string, HistoryEntry[]>
}

function strike(plan: readonly PlannedStrike[], action: Strike['action']): Strike | undefined {
  return plan.find((planned) => planned.action === action)?.strike
}

/** The demo's verdict. Every check reads what the stores hold, or what the workers reported. */
export function audit({ steps, outcome, final, histories }: AuditInput): Check[] {
  const checks: Check[] = []

  checks.push(completedCheck(final, steps))

  const reading = readDownstream(histories)
  const crash = strike(outcome.plan, 'crash')
  let missing = 0
  let duplicated = 0
  let redone = 0
  for (const [item, byStep] of reading.byItem) {
    for (let step = 1; step <= steps; step++) {
      const entries = byStep.get(step) ?? []
      if (entries.length === 0) missing++
      // A step the killed worker wrote but had not checkpointed is written again by its successor:
      // expected (as in the pool's audit). Any other second write is a duplicate.
      for (const entry of entries.slice(0, -1)) {
        if (crash && item === crash.item && entry.token === crash.token) redone++
        else duplicated++
      }
    }
  }
  const expected = histories.size * steps
  checks.push({
    name: 'every step result written exactly once',
    pass: missing === 0 && duplicated === 0 && histories.size === final.length,
    detail: `${expected - missing}/${expected} steps in the downstream table, ${missing} missing, ${duplicated} written twice${redone > 0 ? `, ${redone} redone after the crash (written, not checkpointed)` : ''}`,
  })
  checks.push(staleCheck(reading))

  checks.push({
    name: 'crash followed by an unclean handoff',
    pass:
      crash?.handoff !== undefined &&
      !crash.handoff.cleanHandoff &&
      crash.handoff.token > crash.token &&
      // The step in progress is redone, unless the kill landed just after its checkpoint: the
      // successor resumes from one of those two, never from later.
      (crash.handoff.stepsDone === crash.step - 1 || crash.handoff.stepsDone === crash.step),
    detail: !crash
      ? 'no worker was killed (the run ended first)'
      : !crash.handoff
        ? `${crash.worker} killed holding ${crash.item}, but no one took it over`
        : `${crash.worker} killed in ${crash.item} step ${crash.step} (token ${crash.token}); ${crash.handoff.worker} took token ${crash.handoff.token}, cleanHandoff ${crash.handoff.cleanHandoff}, resumed after step ${crash.handoff.stepsDone}`,
  })

  const stop = strike(outcome.plan, 'stop')
  checks.push({
    name: 'graceful stop followed by a clean handoff',
    pass:
      stop?.handoff?.cleanHandoff === true &&
      stop.handoff.token > stop.token &&
      stop.handoff.stepsDone === stop.step,
    detail: !stop
      ? 'no worker was stopped (the run ended first)'
      : !stop.handoff
        ? `${stop.worker} stopped holding ${stop.item}, but no one took it over`
        : `${stop.worker} finished ${stop.item} step ${stop.step} and released token ${stop.token}; ${stop.handoff.worker} took token ${stop.handoff.token}, cleanHandoff ${stop.handoff.cleanHandoff}, resumed after step ${stop.handoff.stepsDone}`,
  })

  const pause = strike(outcome.plan, 'pause')
  const late = pause?.lateWrites ?? []
  const lateAccepted = late.filter((write) => write.accepted).length
  checks.push({
    name: "paused worker's late writes all rejected",
    pass:
      pause?.resumedAt !== undefined &&
      pause.claimedBy !== undefined &&
      late.length > 0 &&
      lateAccepted === 0,
    detail: !pause
      ? 'no worker was paused (the run ended first)'
      : !pause.claimedBy
        ? `${pause.worker} paused holding ${pause.item}, but no one took it over`
        : late.length === 0
          ? `${pause.worker} made no write with its old token after it was resumed`
          : `${pause.worker} paused ${((pause.resumedAt! - pause.at) / 1000).toFixed(1)} s in ${pause.item} step ${pause.step} (token ${pause.token}); ${pause.claimedBy.worker} claimed token ${pause.claimedBy.token}; ${late.length - lateAccepted}/${late.length} late writes rejected`,
  })

  checks.push({
    name: 'run finished, no worker failed',
    pass: !outcome.timedOut && outcome.failures.length === 0,
    detail: outcome.timedOut
      ? 'timed out'
      : outcome.failures.length
        ? outcome.failures.map((failure) => failure.split('\n')[0]).join('; ')
        : `${outcome.workers.length} workers started, ${(outcome.elapsedMs / 1000).toFixed(1)} s`,
  })
  return checks
}

/**
 * The audit as a table, and a closing verdict line. When the table would be wider than `width` (a
 * terminal), each detail goes on its own line under its check instead.
 */
export function formatAudit(checks: Check[], options: { color: boolean; width?: number }): string {
  const paint = (pass: boolean, text: string) =>
    options.color ? `\x1b[${pass ? 32 : 31}m${text}\x1b[0m` : text
  const nameWidth = Math.max(...checks.map((check) => check.name.length))
  const wide = Math.max(...checks.map((check) => nameWidth + 10 + check.detail.length))
  const lines: string[] = []
  if (options.width === undefined || wide <= options.width) {
    lines.push(`${'check'.padEnd(nameWidth)}  result  detail`, `${'-'.repeat(nameWidth)}  ------  ------`)
    for (const check of checks) {
      const verdict = paint(check.pass, check.pass ? 'PASS  ' : 'FAIL  ')
      lines.push(`${check.name.padEnd(nameWidth)}  ${verdict}  ${check.detail}`)
    }
  } else {
    lines.push('audit')
    for (const check of checks) {
      lines.push(
        `  ${paint(check.pass, check.pass ? 'PASS' : 'FAIL')}  ${check.name}`,
        `        ${check.detail}`,
      )
    }
  }
  const passed = checks.filter((check) => check.pass).length
  const pass = passed === checks.length
  lines.push('', paint(pass, `audit: ${pass ? 'PASS' : 'FAIL'} (${passed}/${checks.length} checks passed)`))
  return lines.join('\n')
}
