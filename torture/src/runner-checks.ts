import {
  describeSuccessor,
  firstAtLeast,
  provesAcquired,
  successorOffset,
  type Violation,
} from './checker.js'
import type { Op } from './history.js'
import type { RunnerLine, RunOutcome } from './runner-workload.js'

type Belief = Extract<RunnerLine, { e: 'b' }>

export interface RunnerCheckOptions {
  /** Slack, in ms, between the store's clock and the host's monotonic one. Default 25. */
  toleranceMs?: number
}

export interface RunnerSummary {
  runs: Partial<Record<RunOutcome, number>>
  /** Times the jobs asked `lease.held`, and how often the answer was yes. */
  beliefs: number
  heldBeliefs: number
  /**
   * `held` answered yes after a successor's acquire had been acknowledged, with clock skew between
   * the holder's extension and the takeover beyond the Leaser's safetyMarginMs: the nemesis's on a
   * client-clock backend, or a step of the host's wall clock on any. Outside what the margin promises,
   * so counted, not a violation (the fence still refused the writes).
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
 *   (a larger token on the same workId) had been acknowledged, or the holder's own release of it had. The Leaser's local deadline is the
 *   start of its last successful extension + ttl - safetyMarginMs on the monotonic clock, and the
 *   store cannot have let the lease go before that extension's start + ttl, so this can only happen
 *   with a broken deadline, or on a client-clock backend with skew beyond the margin (counted apart).
 *
 * How a run ended is counted, not judged: `leaser.run` returns normally when the callback finished
 * while the lease was held, whatever its release meets afterwards (a release that outlives the local
 * deadline ends as 'deadline', even if the store answers FENCED), and the last belief of every job,
 * taken as its callback returns, already holds that moment to the store's history.
 */
export function checkRunner(
  lines: readonly RunnerLine[],
  ops: readonly Op[],
  options: RunnerCheckOptions = {},
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
  const byWork = new Map<string, WorkIndex>()
  for (const op of ops) {
    let index = byWork.get(op.workId)
    if (!index) {
      index = { byToken: new Map(), lostAcquires: [], heldAnswers: [], successorAfter: () => undefined }
      byWork.set(op.workId, index)
    }
    if (op.op === 'acquire' && op.outcome === 'info') index.lostAcquires.push(op)
    if (op.op === 'acquire' && op.outcome === 'fail' && op.code === 'LEASE_HELD') index.heldAnswers.push(op)
    if (op.token === null) continue
    const list = index.byToken.get(op.token) ?? []
    list.push(op)
    index.byToken.set(op.token, list)
  }
  for (const index of byWork.values()) index.successorAfter = successors(index.byToken)

  // One lease's answers all come from its worker's log, in the order they were asked.
  const firstNo = new FirstNo()
  for (const line of lines) {
    if (line.e === 'r') {
      summary.runs[line.outcome] = (summary.runs[line.outcome] ?? 0) + 1
      summary.landed += line.landed
      summary.refusedByFence += line.refused ?? 0
      continue
    }
    summary.beliefs++
    const afterNo = firstNo.see(line)
    if (afterNo) violations.push(afterNo)
    if (!line.held) continue
    summary.heldBeliefs++
    const violation = wrongBelief(line, byWork.get(line.w), tolerance)
    if (violation === 'beyond-margin') summary.wrongBeliefsBeyondMargin++
    else if (violation) violations.push(violation)
  }
  return { violations, summary }
}

/**
 * One workId's ops by token, its acquires whose reply was lost, and the first proof that a token at
 * least a given one had been acquired.
 */
interface WorkIndex {
  byToken: Map<bigint, Op[]>
  lostAcquires: Op[]
  /**
   * Acquires answered LEASE_HELD: the Leaser adopts its own lease from one that names it (holder and
   * token), its deadline from its start.
   */
  heldAnswers: Op[]
  successorAfter: (token: bigint) => Op | undefined
}

/**
 * Suffix minima over tokens: for each token t, the earliest-completing op that proves a token >= t had
 * been acquired: its acknowledged acquire, or a record op the store acknowledged on it (the acquire's
 * reply lost).
 */
function successors(byToken: Map<bigint, Op[]>): (token: bigint) => Op | undefined {
  const tokens = [...byToken.keys()].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
  const from: (Op | undefined)[] = new Array(tokens.length)
  let earliest: Op | undefined
  for (let k = tokens.length - 1; k >= 0; k--) {
    for (const op of byToken.get(tokens[k]!)!) {
      if (provesAcquired(op) && (!earliest || op.complete < earliest.complete)) earliest = op
    }
    from[k] = earliest
  }
  return (token) => from[firstAtLeast(tokens, token)]
}

function wrongBelief(
  belief: Belief,
  index: WorkIndex | undefined,
  tolerance: number,
): Violation | 'beyond-margin' | undefined {
  if (!index) return undefined
  const token = BigInt(belief.tok)
  // Without a takeover to hold it against (or with one skew beyond the margin explains), a yes can still
  // be wrong by the holder's own record: past its local deadline, or after its own release.
  const ownEvidence = () =>
    heldPastDeadline(belief, index, tolerance) ?? heldAfterRelease(belief, index, tolerance)
  const successor = index.successorAfter(token + 1n)
  if (!successor || !(successor.complete + tolerance < belief.t)) return ownEvidence()
  // The holder's last extension the Leaser can have counted: its deadline is no later than this
  // one's start + ttl - margin, and the store's expiry is no earlier than its start + ttl.
  const last = lastCountedExtension(index.byToken.get(token) ?? [], [], belief.h, token, belief.t)
  const skew = skewBeyondHolder(successor, index.byToken.get(token) ?? [], belief, index.lostAcquires)
  if (skew > Math.max(belief.margin - tolerance, 0)) return ownEvidence() ?? 'beyond-margin'
  return {
    check: 'held-after-takeover',
    workId: belief.w,
    message:
      `lease.held was true for ${belief.h} (token ${token}, ttl ${belief.ttl}, margin ${belief.margin}) at ` +
      `t=${belief.t.toFixed(1)}, ${(belief.t - successor.complete).toFixed(1)} ms after ${describeSuccessor(successor)}`,
    ops: last ? [last, successor] : [successor],
  }
}

/**
 * Lease.release() ends the lease locally before it sends anything: no yes once a release of the
 * holder's of that token was sent, whatever its reply (lost, FENCED, late). A Leaser releases no other
 * lease under a token it handed out.
 */
export function ownReleaseSent(tokenOps: readonly Op[], yes: { h: string; t: number }, tolerance: number) {
  return tokenOps.find((op) => op.holder === yes.h && op.op === 'release' && op.invoke + tolerance < yes.t)
}

function heldAfterRelease(belief: Belief, index: WorkIndex, tolerance: number): Violation | undefined {
  const token = BigInt(belief.tok)
  const release = ownReleaseSent(index.byToken.get(token) ?? [], belief, tolerance)
  if (!release) return undefined
  return {
    check: 'held-after-takeover',
    workId: belief.w,
    message:
      `lease.held was true for ${belief.h} (token ${token}) at t=${belief.t.toFixed(1)}, ` +
      `${(belief.t - release.invoke).toFixed(1)} ms after its own release was sent`,
    ops: [release],
  }
}

/**
 * Per lease (workId, token, holder), when `held` first said no: an end is for good (a Lease never
 * comes back), so a later yes is `held-after-loss`. Reported once per lease.
 */
export class FirstNo {
  readonly #at = new Map<string, number>()
  readonly #reported = new Set<string>()

  see(answer: { w: string; tok: string; h: string; t: number; held: boolean }): Violation | undefined {
    const key = `${answer.w}\u0000${answer.tok}\u0000${answer.h}`
    const no = this.#at.get(key)
    if (!answer.held) {
      if (no === undefined || answer.t < no) this.#at.set(key, answer.t)
      return undefined
    }
    if (no === undefined || !(no < answer.t) || this.#reported.has(key)) return undefined
    this.#reported.add(key)
    return {
      check: 'held-after-loss',
      workId: answer.w,
      message: `lease.held said yes to ${answer.h} (token ${answer.tok}) at t=${answer.t.toFixed(1)}, after it had said no at t=${no.toFixed(1)}`,
      ops: [],
    }
  }
}

/**
 * The last extension of `holder`'s lease a Leaser can have counted by `t`: the latest-begun of its
 * acknowledged acquires, renews and checkpoints of the token (`tokenOps`) that returned by then, and
 * of its acquires answered LEASE_HELD begun by then (it adopts its own lease from one).
 */
function lastCountedExtension(
  tokenOps: readonly Op[],
  heldAnswers: readonly Op[],
  holder: string,
  token: bigint,
  t: number,
): Op | undefined {
  let last: Op | undefined
  for (const op of tokenOps) {
    if (op.holder !== holder || !extends_(op) || op.complete > t) continue
    if (!last || op.invoke > last.invoke) last = op
  }
  // Only an answer naming this very lease: the Leaser adopts nothing else (leaser.ts #ownLease).
  for (const op of heldAnswers) {
    if (op.holder !== holder || op.invoke > t) continue
    if (op.heldBy?.holder !== holder || op.heldBy.token !== token) continue
    if (!last || op.invoke > last.invoke) last = op
  }
  return last
}

/**
 * The Leaser's local deadline is at most the start of the last extension it can have counted (an
 * acknowledged acquire, renew or checkpoint of the holder's that returned before the question, or an
 * acquire answered LEASE_HELD, from which it adopts its own lease) + ttl - margin, on the monotonic
 * clock every process shares. A yes past it is a broken deadline, on any clock and with or without a
 * successor: skew never moves the local deadline.
 */
function heldPastDeadline(belief: Belief, index: WorkIndex, tolerance: number): Violation | undefined {
  const token = BigInt(belief.tok)
  const past = pastLocalDeadline(index.byToken.get(token) ?? [], index.heldAnswers, belief, tolerance)
  return (
    past && {
      check: 'held-after-takeover',
      workId: belief.w,
      message: `lease.held was true for ${belief.h} (token ${token}, ttl ${belief.ttl}, margin ${belief.margin}) at t=${belief.t.toFixed(1)}, ${past.why}`,
      ops: [past.last],
    }
  )
}

/**
 * How far the clock a successor's takeover read was ahead of the one its holder's lease expiry was
 * set on. Offsets are the nemesis's skew on a client-clock backend, and on every backend the host
 * wall clock's move. Any extension of the holder's that may have landed before the takeover counts,
 * even one the Leaser never heard back from: sent on a clock jumped back, it set an earlier expiry.
 */
export function skewBeyondHolder(
  successor: Op,
  tokenOps: readonly Op[],
  holder: { readonly h: string; readonly off: number },
  lostAcquires: readonly Op[],
): number {
  let holderOffset = holder.off
  for (const op of tokenOps) {
    if (op.holder !== holder.h || op.op === 'readCheckpoint' || op.op === 'release') continue
    if (op.outcome === 'fail' || op.invoke > successor.complete) continue
    holderOffset = Math.min(holderOffset, op.offsetAtInvoke, op.offsetAtComplete)
  }
  return successorOffset(successor, lostAcquires) - holderOffset
}

/**
 * Whether a yes at `yes.t` came past the Leaser's local deadline (above): the last extension it can
 * have counted, and the words for how far past.
 */
export function pastLocalDeadline(
  tokenOps: readonly Op[],
  heldAnswers: readonly Op[],
  yes: { h: string; tok: string; t: number; ttl: number; margin: number },
  tolerance: number,
): { last: Op; why: string } | undefined {
  const last = lastCountedExtension(tokenOps, heldAnswers, yes.h, BigInt(yes.tok), yes.t)
  if (!last) return undefined
  const deadline = last.invoke + yes.ttl - yes.margin
  if (!(yes.t > deadline + tolerance)) return undefined
  return {
    last,
    why: `${(yes.t - deadline).toFixed(1)} ms past its Leaser's local deadline (the ${last.op} begun at ${last.invoke.toFixed(1)} was the last extension it can have counted)`,
  }
}
