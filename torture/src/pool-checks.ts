import { describeSuccessor, firstAtLeast, provesAcquired, type Violation } from './checker.js'
import { isRead, type Op } from './history.js'
import { POOL_GROUP, type PoolLine } from './pool-workload.js'
import { FirstNo, ownReleaseSent, pastLocalDeadline, skewBeyondHolder } from './runner-checks.js'

export interface PoolCheckOptions {
  /** Slack, in ms, between the store's clock and the host's monotonic one. Default 25. */
  toleranceMs?: number
}

export interface PoolSummary {
  /** Members that joined (first rebalance done) and left (close returned). */
  joined: number
  left: number
  /** Handler runs (leases a handler read the checkpoint under), steps asked, and steps answered yes. */
  runs: number
  steps: number
  heldSteps: number
  /** Units given up by consent and reported released. */
  handoffs: number
  /** Unit leases the pool reported lost. */
  lostUnits: number
  /** Handler runs that finished their unit, and units the pool then reported done (its mark set). */
  finished: number
  done: number
  /**
   * Overlaps whose clock skew exceeded the margin (the nemesis's on a client-clock backend, a host wall
   * clock step on any): counted, not violations.
   */
  overlapsBeyondMargin: number
}

type Step = Extract<PoolLine, { e: 'step' | 'return' }>

const compareTokens = (x: bigint, y: bigint) => (x < y ? -1 : x > y ? 1 : 0)
const isAcquireOk = (op: Op) => op.op === 'acquire' && op.outcome === 'ok'
const mayHaveLanded = (op: Op) => op.outcome === 'ok' || op.outcome === 'info'

/** One unit's store history, indexed for the pool checks. */
class UnitHistory {
  readonly byToken = new Map<bigint, Op[]>()
  /** Every acquire, in the order recorded: one whose reply was lost has no token to file it under. */
  readonly acquires: Op[] = []
  readonly lostAcquires: Op[] = []
  /** Acquires answered LEASE_HELD: a Leaser adopts its own lease from one naming it, its deadline from its start. */
  readonly heldAnswers: Op[] = []
  /**
   * Per checkpoint value: its token, first invocation, its attempts, whether one was acknowledged, and
   * (after `index`) whether one may have landed, or else the op that ended its lease before an
   * attempt whose reply was lost was sent.
   */
  readonly sent = new Map<
    string,
    { token: bigint; first: number; attempts: Op[]; acked: boolean; mayHaveLanded: boolean; endedBy?: Op }
  >()
  #tokens: bigint[] = []
  #earliestFrom: (Op | undefined)[] = []

  add(op: Op): void {
    if (op.op === 'acquire') this.acquires.push(op)
    if (op.op === 'acquire' && op.outcome === 'info') this.lostAcquires.push(op)
    if (op.op === 'acquire' && op.outcome === 'fail' && op.code === 'LEASE_HELD') this.heldAnswers.push(op)
    if (op.token !== null) {
      const list = this.byToken.get(op.token) ?? []
      list.push(op)
      this.byToken.set(op.token, list)
    }
    if (op.op === 'checkpoint' && op.value !== null) {
      const s = this.sent.get(op.value) ?? {
        token: op.token!,
        first: op.invoke,
        attempts: [],
        acked: false,
        mayHaveLanded: false,
      }
      s.first = Math.min(s.first, op.invoke)
      s.attempts.push(op)
      s.acked ||= op.outcome === 'ok'
      this.sent.set(op.value, s)
    }
  }

  index(): void {
    this.#tokens = [...this.byToken.keys()].sort(compareTokens)
    let earliest: Op | undefined
    this.#earliestFrom = new Array(this.#tokens.length)
    for (let k = this.#tokens.length - 1; k >= 0; k--) {
      for (const op of this.byToken.get(this.#tokens[k]!)!) {
        if (provesAcquired(op) && (!earliest || op.complete < earliest.complete)) earliest = op
      }
      this.#earliestFrom[k] = earliest
    }
    // An attempt whose reply was lost may have landed only if it was sent before its lease certainly
    // ended (a larger token proven, or its own release acknowledged): after that the store fenced it,
    // as checker.ts rules for failed-checkpoint-visible.
    const ended = new Map<bigint, Op | undefined>()
    const endOf = (token: bigint): Op | undefined => {
      if (ended.has(token)) return ended.get(token)
      let end = this.successorFrom(token + 1n)
      for (const r of this.byToken.get(token) ?? []) {
        if (r.op === 'release' && r.outcome === 'ok' && (!end || r.complete < end.complete)) end = r
      }
      ended.set(token, end)
      return end
    }
    for (const s of this.sent.values()) {
      for (const c of s.attempts) {
        if (!mayHaveLanded(c)) continue
        const end = c.outcome === 'info' ? endOf(s.token) : undefined
        if (end && c.invoke > end.complete) s.endedBy ??= end
        else s.mayHaveLanded = true
      }
    }
  }

  /**
   * The earliest-completing op that proves a token >= `token` had been acquired: its acknowledged
   * acquire, or a record op the store acknowledged on it (the acquire's reply lost).
   */
  successorFrom(token: bigint): Op | undefined {
    return this.#earliestFrom[firstAtLeast(this.#tokens, token)]
  }

  /**
   * The newest acknowledged checkpoint under a token below `token`: the largest token, and of its
   * checkpoints the one its holder sent last (first invocations order one holder's sends).
   */
  newestAcknowledgedBefore(token: bigint): { value: string; token: bigint; first: number } | undefined {
    let best: { value: string; token: bigint; first: number } | undefined
    for (const [value, s] of this.sent) {
      if (!s.acked || s.token >= token) continue
      if (!best || s.token > best.token || (s.token === best.token && s.first > best.first))
        best = { value, token: s.token, first: s.first }
    }
    return best
  }
}

/**
 * The pool's own claims, checked against the recorded backend history (every call the members'
 * Leasers made, which the store-level checks judge too):
 * - `pool-overlap`: no two members run one unit at once. A handler runs its unit from its lease's
 *   acknowledged acquire until the last time `lease.held` told it yes (before a step of work, or as it
 *   returned). A yes after an acquire of a larger token on that unit had been acknowledged is two
 *   members running it at once. On a client-clock backend, a yes after a takeover whose clock skew
 *   exceeded the Leaser's margin is counted apart, as for the runner's `held-after-takeover`.
 * - `pool-lost-checkpoint`: a handler's first read of its unit returns the newest acknowledged
 *   checkpoint of the earlier tokens (or one sent after it that may have landed, which one whose
 *   reply was lost did only if it was sent before its lease certainly ended): what a member saved
 *   before it gave the unit up or crashed is what its successor resumes from.
 * - `pool-released-but-lost`: the pool reports a unit `released` only when its release ended the lease
 *   as released; one whose release never landed (FENCED, or the store failing until the deadline) is
 *   reported `lost`, since its successor reads `cleanHandoff: false`.
 * - `pool-misread`: a handler is given the state and cleanHandoff one of its Leaser's store reads of
 *   that token returned (its readCheckpoint, or the acquire that read it).
 * - `pool-rerun`: a handler runs once per token: a Leaser never hands out a lease twice (a second read
 *   under one token is a lease adopted again after it was let go).
 * - `pool-overlap` also covers a yes after the member's own release of the token was acknowledged, and
 *   a yes past the member's Leaser's local deadline (as the runner's `held-after-takeover` does).
 * - `pool-unclean-handoff`: a unit a live member gave up by consent (the pool reported it `released`)
 *   is read by the next token with `cleanHandoff: true` and the giver's last checkpoint, when that
 *   checkpoint was acknowledged. The next token read it first thing, so nothing else can have been
 *   stored in between.
 * - `pool-run-after-done`: no handler runs a unit taken after its done mark (`pool/d/<unit>`) was
 *   set: a member reads the mark once its take succeeded, and the store acknowledged the mark's
 *   release before that take was sent. (A mark acquired and never released, its member killed, expires
 *   unset.) (A take sent earlier may run it: a finished unit runs at least
 *   once. Units never leave the set in these runs, so no mark is cleared; a store whose listing lags
 *   its writes, as DynamoDB's index does, could miss a fresh mark and would need excusing here.)
 * - `pool-done-unmarked`: the pool reports a unit `done` only after an acquire of its mark that may
 *   have landed.
 */
export function checkPool(
  lines: readonly PoolLine[],
  ops: readonly Op[],
  options: PoolCheckOptions = {},
): { violations: Violation[]; summary: PoolSummary } {
  const tolerance = options.toleranceMs ?? 25
  const violations: Violation[] = []
  const summary: PoolSummary = {
    joined: 0,
    left: 0,
    runs: 0,
    steps: 0,
    heldSteps: 0,
    handoffs: 0,
    lostUnits: 0,
    finished: 0,
    done: 0,
    overlapsBeyondMargin: 0,
  }
  const units = new Set<string>()
  for (const line of lines) if (line.e !== 'member') units.add(line.w)
  const histories = new Map<string, UnitHistory>()
  // Per unit, the ops on its done mark.
  const markOps = new Map<string, Op[]>()
  for (const op of ops) {
    const unit = unitOfMark(op.workId)
    if (unit !== undefined) markOps.set(unit, [...(markOps.get(unit) ?? []), op])
    if (!units.has(op.workId)) continue
    let history = histories.get(op.workId)
    if (!history) {
      history = new UnitHistory()
      histories.set(op.workId, history)
    }
    history.add(op)
  }
  for (const history of histories.values()) history.index()
  // Per unit, the op that proves its mark set earliest: an acknowledged release of it. A mark only
  // acquired counts as set while held, and one whose member died before releasing it expires unset:
  // the unit then runs again, rightly.
  const markSet = new Map<string, Op>()
  for (const [unit, list] of markOps) {
    for (const op of list) {
      const proves = op.op === 'release' && op.outcome === 'ok'
      const earliest = markSet.get(unit)
      if (proves && (!earliest || op.complete < earliest.complete)) markSet.set(unit, op)
    }
  }
  const empty = new UnitHistory()
  const historyOf = (workId: string) => histories.get(workId) ?? empty

  // The last yes per lease and holder: the end of that handler's run.
  const lastHeld = new Map<string, Step>()
  // Leases (and holders) already reported told yes past their deadline: one report each.
  const pastDeadline = new Set<string>()
  // Per lease and holder, its handler's first read: a second is a second run under one token.
  const firstRead = new Map<string, Extract<PoolLine, { e: 'read' }>>()
  // One lease's answers all come from its member's log, in the order they were asked.
  const firstNo = new FirstNo()
  for (const line of lines) {
    if (line.e === 'member') {
      if (line.what === 'joined') summary.joined++
      else if (line.what === 'left') summary.left++
      else summary.lostUnits++
      continue
    }
    if (line.e === 'read') {
      summary.runs++
      const history = historyOf(line.w)
      const token = BigInt(line.tok)
      const key = `${line.w}\u0000${line.tok}\u0000${line.h}`
      const earlier = firstRead.get(key)
      if (earlier) {
        violations.push({
          check: 'pool-rerun',
          workId: line.w,
          message: `${line.h} ran token ${token} twice (its handler read at t=${earlier.t.toFixed(1)} and t=${line.t.toFixed(1)}): a Leaser never hands out one lease twice`,
          ops: readsOf(history, token, line.h),
        })
      } else firstRead.set(key, line)
      const mark = markSet.get(line.w)
      // The member's take behind this run: its last acquire of the unit sent before the handler read.
      const take = history.acquires
        .filter((op) => op.holder === line.h && op.invoke <= line.t)
        .reduce<Op | undefined>((last, op) => (!last || op.invoke > last.invoke ? op : last), undefined)
      if (mark && take && take.invoke > mark.complete + tolerance) {
        violations.push({
          check: 'pool-run-after-done',
          workId: line.w,
          message: `${line.h} ran token ${token} (its handler read at t=${line.t.toFixed(1)}), taken ${(take.invoke - mark.complete).toFixed(1)} ms after the unit's done mark was set`,
          ops: [mark, take],
        })
      }
      // What the handler was given is what one of the store's reads returned (the Leaser's own
      // readCheckpoint, or its acquire's). The recording backend logs a read's reply before the
      // Leaser sees it, so a handler given a state with no acknowledged read behind it was given one
      // the Leaser made up.
      const storeReads = (history.byToken.get(token) ?? []).filter((op) => isRead(op) && op.holder === line.h)
      if (!storeReads.some((op) => op.read === line.read && op.clean === line.clean)) {
        const returned = storeReads.map((op) => `${JSON.stringify(op.read)} (cleanHandoff ${op.clean})`)
        violations.push({
          check: 'pool-misread',
          workId: line.w,
          message: `${line.h}'s handler of token ${token} was given ${JSON.stringify(line.read)} (cleanHandoff ${line.clean}), but ${returned.length > 0 ? `the store returned ${returned.join(', ')}` : 'no read of the store returned anything'}`,
          ops: storeReads,
        })
      }
      const newest = history.newestAcknowledgedBefore(token)
      if (!newest || line.read === newest.value) continue
      const source = line.read === null ? undefined : history.sent.get(line.read)
      const later =
        source?.mayHaveLanded &&
        source.token < token &&
        (source.token > newest.token || (source.token === newest.token && source.first > newest.first))
      if (later) continue
      const writer = history.byToken
        .get(newest.token)
        ?.find((op) => op.op === 'checkpoint' && op.value === newest.value && op.outcome === 'ok')
      const fenced = source && !source.mayHaveLanded && source.endedBy
      violations.push({
        check: 'pool-lost-checkpoint',
        workId: line.w,
        message:
          `${line.h} took token ${token} and read ${JSON.stringify(line.read)}, though token ${newest.token}'s checkpoint ${JSON.stringify(newest.value)} had been acknowledged` +
          (fenced
            ? ` (${JSON.stringify(line.read)} was sent after token ${source.token}'s lease had ended)`
            : ''),
        ops: [
          ...(writer ? [writer] : []),
          ...(fenced ? [...source.attempts, source.endedBy!] : []),
          ...readsOf(history, token, line.h),
        ],
      })
      continue
    }
    if (line.e === 'finish') {
      summary.finished++
      continue
    }
    if (line.e === 'done') {
      summary.done++
      if (!(markOps.get(line.w) ?? []).some((op) => op.op === 'acquire' && mayHaveLanded(op))) {
        violations.push({
          check: 'pool-done-unmarked',
          workId: line.w,
          message: `the pool reported ${line.h}'s unit done (token ${line.tok}), but no acquire of its done mark can have landed`,
          ops: markOps.get(line.w) ?? [],
        })
      }
      continue
    }
    if (line.e === 'handoff') {
      summary.handoffs++
      const history = historyOf(line.w)
      const token = BigInt(line.tok)
      // The pool's own word, and the store's: a release that may have landed (acknowledged, or its
      // reply lost), else nothing was released whatever the pool says.
      const own = releasesOf(history, token).filter((op) => op.holder === line.h)
      const mayHaveReleased = own.some(mayHaveLanded)
      // Lease.release() counts a FENCED retry after a lost reply as released when it cannot list:
      // wrong after a takeover by a successor whose clock runs ahead, beyond the margin (as for
      // overlaps). Its first attempt may even be recorded FENCED, its reply come late.
      const skewedPast = (successor: Op | undefined) =>
        successor !== undefined &&
        line.margin !== undefined &&
        skewBeyondHolder(
          successor,
          history.byToken.get(token) ?? [],
          { h: line.h, off: Number.POSITIVE_INFINITY },
          history.lostAcquires,
        ) > Math.max(line.margin - tolerance, 0)
      const allFenced = own.length > 0 && own.every((op) => op.outcome === 'fail' && op.code === 'FENCED')
      if (line.confirmed && !mayHaveReleased && allFenced && skewedPast(history.successorFrom(token + 1n))) {
        summary.overlapsBeyondMargin++
        continue
      }
      if (!line.confirmed || !mayHaveReleased) {
        violations.push({
          check: 'pool-released-but-lost',
          workId: line.w,
          message: line.confirmed
            ? `the pool reported ${line.h}'s token ${token} released, but no release of it can have landed`
            : `the pool reported ${line.h}'s token ${token} released, but its release ended the lease as lost`,
          ops: releasesOf(history, token),
        })
        continue
      }
      const next = (history.byToken.get(token + 1n) ?? [])
        .filter(isRead)
        .sort((x, y) => x.invoke - y.invoke)[0]
      if (!next) continue
      const given = (history.byToken.get(token) ?? [])
        .filter((op) => op.op === 'checkpoint' && op.holder === line.h && op.value !== null)
        .sort((x, y) => history.sent.get(y.value!)!.first - history.sent.get(x.value!)!.first)[0]
      const last = given ? history.sent.get(given.value!) : undefined
      const acknowledged = own.some((op) => op.outcome === 'ok')
      if (next.clean !== true && !acknowledged && skewedPast(next)) {
        summary.overlapsBeyondMargin++
      } else if (next.clean !== true) {
        violations.push({
          check: 'pool-unclean-handoff',
          workId: line.w,
          message: `${line.h} gave token ${token} up by consent and its release ended as released, but token ${token + 1n} read cleanHandoff ${next.clean}`,
          ops: [...releasesOf(history, token), next],
        })
      } else if (given && last?.acked && next.read !== given.value) {
        violations.push({
          check: 'pool-unclean-handoff',
          workId: line.w,
          message: `${line.h} gave token ${token} up by consent after checkpointing ${JSON.stringify(given.value)}, but token ${token + 1n} read ${JSON.stringify(next.read)}`,
          ops: [given, next],
        })
      }
      continue
    }
    summary.steps++
    const afterNo = firstNo.see(line)
    if (afterNo) violations.push(afterNo)
    if (!line.held) continue
    summary.heldSteps++
    const key = `${line.w}\u0000${line.tok}\u0000${line.h}`
    const seen = lastHeld.get(key)
    if (!seen || line.t > seen.t) lastHeld.set(key, line)
    if (!pastDeadline.has(key)) {
      const violation = heldPastDeadline(line, historyOf(line.w), tolerance)
      if (violation) {
        pastDeadline.add(key)
        violations.push(violation)
      }
    }
  }

  const ownReleaseBefore = (history: UnitHistory, end: Step): Op | undefined =>
    ownReleaseSent(history.byToken.get(BigInt(end.tok)) ?? [], end, tolerance)
  for (const end of lastHeld.values()) {
    const history = historyOf(end.w)
    const token = BigInt(end.tok)
    const successor = history.successorFrom(token + 1n)
    if (!successor || !(successor.complete + tolerance < end.t)) {
      const release = ownReleaseBefore(history, end)
      if (release) {
        violations.push({
          check: 'pool-overlap',
          workId: end.w,
          message: `${end.h} ran token ${token} until t=${end.t.toFixed(1)} (lease.held yes), ${(end.t - release.invoke).toFixed(1)} ms after its own release was sent`,
          ops: [release],
        })
      }
      continue
    }
    const skew = skewBeyondHolder(successor, history.byToken.get(token) ?? [], end, history.lostAcquires)
    if (skew > Math.max(end.margin - tolerance, 0) && !ownReleaseBefore(history, end)) {
      summary.overlapsBeyondMargin++
      continue
    }
    const acquire = (history.byToken.get(token) ?? []).find((op) => isAcquireOk(op) && op.holder === end.h)
    violations.push({
      check: 'pool-overlap',
      workId: end.w,
      message: `${end.h} ran token ${token} until t=${end.t.toFixed(1)} (lease.held yes), ${(end.t - successor.complete).toFixed(1)} ms after ${describeSuccessor(successor)}`,
      ops: [...(acquire ? [acquire] : []), successor],
    })
  }
  return { violations, summary }
}

/**
 * As the runner's check: the member's Leaser's local deadline is at most the start of the last
 * extension it can have counted (an acknowledged acquire, renew or checkpoint of the member's that
 * returned before the question, or an acquire answered LEASE_HELD, from which it adopts its own
 * lease) + ttl - margin, on the monotonic clock every process shares. A yes past it is a broken
 * deadline, with or without a successor, on any clock.
 */
function heldPastDeadline(line: Step, history: UnitHistory, tolerance: number): Violation | undefined {
  const { ttl } = line
  if (ttl === undefined) return undefined
  const token = BigInt(line.tok)
  const past = pastLocalDeadline(
    history.byToken.get(token) ?? [],
    history.heldAnswers,
    { ...line, ttl },
    tolerance,
  )
  if (!past) return undefined
  const what = `${line.h} ran token ${token} at t=${line.t.toFixed(1)} (lease.held yes; ttl ${ttl}, margin ${line.margin})`
  return { check: 'pool-overlap', workId: line.w, message: `${what}, ${past.why}`, ops: [past.last] }
}

const MARK_PREFIX = `${POOL_GROUP}/d/`

/** The unit lease (`pool/u/<unit>`) whose done mark `workId` is, if it is one. */
function unitOfMark(workId: string): string | undefined {
  return workId.startsWith(MARK_PREFIX) ? `${POOL_GROUP}/u/${workId.slice(MARK_PREFIX.length)}` : undefined
}

const readsOf = (history: UnitHistory, token: bigint, holder: string): Op[] =>
  (history.byToken.get(token) ?? [])
    .filter((op) => (op.op === 'readCheckpoint' || isRead(op)) && op.holder === holder)
    .slice(0, 1)

const releasesOf = (history: UnitHistory, token: bigint): Op[] =>
  (history.byToken.get(token) ?? []).filter((op) => op.op === 'release')
