import type { Violation } from './checker.js'
import type { Op } from './history.js'
import type { RunnerLine, RunOutcome } from './runner-workload.js'

type Belief = Extract<RunnerLine, { e: 'b' }>
type RunEnd = Extract<RunnerLine, { e: 'r' }>

export interface RunnerCheckOptions {
  /** The backend computes expiry on its callers' clocks, which the nemesis skews. */
  clientClock: boolean
  /** Slack, in ms, between the store's clock and the host's monotonic one. Default 25. */
  toleranceMs?: number
}

export interface RunnerSummary {
  runs: Partial<Record<RunOutcome, number>>
  /** Times the jobs asked `lease.held`, and how often the answer was yes. */
  beliefs: number
  heldBeliefs: number
  /**
   * `held` answered yes after a successor's acquire had been acknowledged, on a client-clock backend
   * whose injected skew between the two processes exceeded the Leaser's safetyMarginMs: outside
   * what the margin promises, so counted, not a violation (the fence still refused the writes).
   */
  wrongBeliefsBeyondMargin: number
  /** Fenced writes that landed, and those the downstream fence refused to a superseded holder. */
  landed: number
  refusedByFence: number
}

const extends_ = (op: Op) =>
  op.outcome === 'ok' && (op.op === 'acquire' || op.op === 'renew' || op.op === 'checkpoint')

/**
 * The runner's own claims, checked against the recorded backend history:
 * - `held-after-takeover`: `lease.held` said yes although, before it was asked, a successor's acquire
 *   (a larger token on the same workId) had been acknowledged. The Leaser's local deadline is the
 *   start of its last successful extension + ttl - safetyMarginMs on the monotonic clock, and the
 *   store cannot have let the lease go before that extension's start + ttl, so this can only happen
 *   with a broken deadline, or on a client-clock backend with skew beyond the margin (counted apart).
 * - `run-ok-but-fenced`: `leaser.run` returned normally although the release of its lease was refused
 *   with FENCED (someone had taken the lease over) on its first attempt (after a retry, FENCED may
 *   be the earlier attempt's own release having landed).
 */
export function checkRunner(
  lines: readonly RunnerLine[],
  ops: readonly Op[],
  options: RunnerCheckOptions,
): { violations: Violation[]; summary: RunnerSummary } {
  const tolerance = options.toleranceMs ?? 25
  const violations: Violation[] = []
  const summary: RunnerSummary = {
    runs: {},
    beliefs: 0,
    heldBeliefs: 0,
    wrongBeliefsBeyondMargin: 0,
    landed: 0,
    refusedByFence: 0,
  }
  const byWork = new Map<string, Op[]>()
  for (const op of ops) {
    const list = byWork.get(op.workId) ?? []
    list.push(op)
    byWork.set(op.workId, list)
  }

  for (const line of lines) {
    if (line.e === 'r') {
      summary.runs[line.outcome] = (summary.runs[line.outcome] ?? 0) + 1
      summary.landed += line.landed
      summary.refusedByFence += line.refused ?? 0
      const fenced = fencedRelease(line, byWork.get(line.w) ?? [])
      if (fenced) {
        violations.push({
          check: 'run-ok-but-fenced',
          workId: line.w,
          message: `run by ${line.h} with token ${line.tok} returned normally, but its release was refused with FENCED`,
          ops: [fenced],
        })
      }
      continue
    }
    summary.beliefs++
    if (!line.held) continue
    summary.heldBeliefs++
    const violation = wrongBelief(line, byWork.get(line.w) ?? [], options.clientClock, tolerance)
    if (violation === 'beyond-margin') summary.wrongBeliefsBeyondMargin++
    else if (violation) violations.push(violation)
  }
  return { violations, summary }
}

function fencedRelease(run: RunEnd, ops: readonly Op[]): Op | undefined {
  if (run.outcome !== 'ok' || run.tok === undefined) return undefined
  const token = BigInt(run.tok)
  const releases = ops.filter(
    (op) =>
      op.op === 'release' &&
      op.holder === run.h &&
      op.token === token &&
      op.invoke >= run.t0 &&
      op.invoke <= run.t1,
  )
  const fenced = releases.find((op) => op.outcome === 'fail' && op.code === 'FENCED')
  // The Leaser retries a release only after an attempt whose outcome it did not learn (a store error, or
  // its call timeout: the attempt may still complete later, as recorded here). FENCED after such an
  // attempt may be that attempt's own release having landed: the Leaser then counts the lease
  // released, and rightly so.
  if (!fenced || releases.some((op) => op.invoke < fenced.invoke)) return undefined
  return fenced
}

function wrongBelief(
  belief: Belief,
  ops: readonly Op[],
  clientClock: boolean,
  tolerance: number,
): Violation | 'beyond-margin' | undefined {
  const token = BigInt(belief.tok)
  const successor = ops.find(
    (op) =>
      op.op === 'acquire' &&
      op.outcome === 'ok' &&
      op.token !== null &&
      op.token > token &&
      op.complete + tolerance < belief.t,
  )
  if (!successor) return undefined
  // The holder's last extension the Leaser can have counted: its deadline is no later than this
  // one's start + ttl - margin, and the store's expiry is no earlier than its start + ttl.
  let last: Op | undefined
  for (const op of ops) {
    if (op.holder !== belief.h || op.token !== token || !extends_(op) || op.complete > belief.t) continue
    if (!last || op.invoke > last.invoke) last = op
  }
  if (clientClock && last) {
    // Expiry was computed on the holder's skewed clock, and the successor compared it with its own.
    const skew =
      Math.max(successor.offsetAtInvoke, successor.offsetAtComplete) -
      Math.min(last.offsetAtInvoke, last.offsetAtComplete, belief.off)
    if (skew > belief.margin - tolerance) return 'beyond-margin'
  }
  return {
    check: 'held-after-takeover',
    workId: belief.w,
    message:
      `lease.held was true for ${belief.h} (token ${token}, ttl ${belief.ttl}, margin ${belief.margin}) at ` +
      `t=${belief.t.toFixed(1)}, ${(belief.t - successor.complete).toFixed(1)} ms after ${successor.holder}'s ` +
      `acquire of token ${successor.token} was acknowledged`,
    ops: last ? [last, successor] : [successor],
  }
}
