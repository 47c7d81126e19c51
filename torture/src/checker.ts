import { isRead, type Op } from './history.js'

/** The names of the checks; each is a necessary condition of linearizability against the contract. */
export type CheckName =
  | 'duplicate-token'
  | 'token-order'
  | 'token-gap'
  | 'valid-after-end'
  | 'fenced-while-valid'
  | 'interleaved-checkpoints'
  | 'phantom-state'
  | 'failed-checkpoint-visible'
  | 'read-from-future'
  | 'stale-read'
  | 'clean-handoff'
  | 'early-takeover'
  | 'held-when-free'
  | 'named-wrong-lease'
  // An answer the operation never gives: acquire refused FENCED or LEASE_EXPIRED, a record op LEASE_HELD.
  | 'wrong-refusal'
  | 'renewed-after-expiry'
  | 'expired-while-live'
  // The contract's max rule and checkpoint order (issue 14): renew and checkpoint never move the expiry
  // backward, and a checkpoint the holder sent earlier never replaces one it sent later.
  | 'expiry-moved-back'
  | 'checkpoint-rollback'
  // The runner workload's (runner-checks.ts):
  | 'held-after-takeover'
  // The runner's and the pool's: lease.held said yes after it had said no (an end is for good).
  | 'held-after-loss'
  // The pool workload's (pool-checks.ts):
  | 'pool-overlap'
  | 'pool-lost-checkpoint'
  | 'pool-released-but-lost'
  | 'pool-unclean-handoff'
  | 'pool-misread'
  | 'pool-rerun'
  | 'pool-run-after-done'
  | 'pool-done-unmarked'

export interface Violation {
  readonly check: CheckName
  readonly workId: string
  readonly message: string
  /** The ops that together prove the violation. */
  readonly ops: readonly Op[]
}

export interface CheckOptions {
  /**
   * Slack, in ms, for the time-based checks: the store's "now" is read on the wall clock (ms
   * rounding) and the history on the host's monotonic clock, which advance at the same rate. Default 10.
   */
  toleranceMs?: number
}

/** A record op that, when it returned, proved its record valid at some instant inside its interval. */
const provesValid = (op: Op): boolean =>
  op.op !== 'acquire' && (op.outcome === 'ok' || (op.outcome === 'fail' && op.code === 'LEASE_EXPIRED'))

const isAcquireOk = (op: Op): boolean => op.op === 'acquire' && op.outcome === 'ok'
/**
 * An op whose return proves its token had been acquired: an acknowledged acquire, or a record op that
 * proved its record valid (its holder's acquire may have lost its reply; the Leaser finds its own
 * lease through LEASE_HELD and uses it).
 */
export const provesAcquired = (op: Op): boolean => isAcquireOk(op) || provesValid(op)

/** How a successor's proof reads in a message: "B's acquire of token 2 was acknowledged". */
export const describeSuccessor = (op: Op): string =>
  `${op.holder}'s ${op.op} of token ${op.token} was ${op.outcome === 'ok' ? 'acknowledged' : `answered ${op.code}`}` +
  (op.op === 'acquire' ? '' : " (its acquire's reply was lost)")

/**
 * The largest clock offset the acquire behind a successor's proof can have read: the acquire's own, or,
 * for a token only a record op proves, that op's and those of its holder's acquires on the workId
 * whose reply was lost, begun before it returned.
 */
export function successorOffset(successor: Op, lostAcquires: readonly Op[]): number {
  let offset = Math.max(successor.offsetAtInvoke, successor.offsetAtComplete)
  if (successor.op === 'acquire') return offset
  for (const a of lostAcquires) {
    if (a.holder === successor.holder && a.invoke < successor.complete)
      offset = Math.max(offset, a.offsetAtInvoke, a.offsetAtComplete)
  }
  return offset
}
const compareTokens = (x: bigint, y: bigint): number => (x < y ? -1 : x > y ? 1 : 0)
/**
 * The first index in `0..length` where `before(index)` is false, for a `before` that is true up to
 * some index and false from there on (a binary search over a sorted list).
 */
export function partitionPoint(length: number, before: (index: number) => boolean): number {
  let lo = 0
  let hi = length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (before(mid)) lo = mid + 1
    else hi = mid
  }
  return lo
}
/** The index of the first of the ascending `tokens` that is >= `token`. */
export function firstAtLeast(tokens: readonly bigint[], token: bigint): number {
  return partitionPoint(tokens.length, (index) => tokens[index]! < token)
}
const isAcquireInfo = (op: Op): boolean => op.op === 'acquire' && op.outcome === 'info'
const mayHaveHappened = (op: Op): boolean => op.outcome === 'ok' || op.outcome === 'info'
/** An op that may have set the expiry of its token: its acquire, or a renew or checkpoint that may have landed. */
const mayExtend = (op: Op): boolean =>
  op.ttl !== null &&
  (isAcquireOk(op) || ((op.op === 'renew' || op.op === 'checkpoint') && mayHaveHappened(op)))

// The "now" an op read, in the history's ms: between its invocation and its completion, shifted by
// its process's injected clock offset (client-clock backends; 0 on server clocks, whose server is on
// this host). Drivers read the clock in the same tick as the invocation is recorded, so the offset at
// invocation is the one used, and the smaller/larger of the two recorded bounds it either way.
const nowLo = (op: Op): number => op.invoke + Math.min(op.offsetAtInvoke, op.offsetAtComplete)
const nowHi = (op: Op): number => op.complete + Math.max(op.offsetAtInvoke, op.offsetAtComplete)

/**
 * The latest expiry the store can have had for a token, counting every extender that may have landed
 * before `before` (invoked earlier), `except` one op, and `acquired`: the latest expiry a lost acquire
 * that took the token can have set. A renew that landed after the expiry changed nothing
 * (LEASE_EXPIRED), so a lost renew can only add its ttl to an expiry its "now" was still before; a
 * checkpoint revives an expired lease nobody took over, so a lost one may land at any time.
 */
function latestExpiry(
  same: readonly Op[],
  before: number,
  except?: Op,
  acquired = Number.NEGATIVE_INFINITY,
): number {
  let at = acquired
  const lostRenews: Op[] = []
  for (const e of same) {
    if (e === except || !mayExtend(e) || !(e.invoke < before)) continue
    if (e.outcome === 'info') {
      if (e.op === 'checkpoint') return Number.POSITIVE_INFINITY
      lostRenews.push(e)
    } else at = Math.max(at, nowHi(e) + e.ttl!)
  }
  // Ascending by the earliest "now" they read: one pass reaches the fixed point, since the expiry
  // only grows and a renew that could not land before it cannot once the renews after it did not.
  lostRenews.sort((x, y) => nowLo(x) - nowLo(y))
  for (const r of lostRenews) if (nowLo(r) < at) at += r.ttl!
  return at
}

/**
 * The latest expiry the store can have had for a token when `renew` read its "now", given that
 * `refusal` (a renew answered LEASE_EXPIRED before `renew` began) found it expired: at most the
 * refusal's "now", moved since only by what may have landed after the refusal read it. A checkpoint
 * whose reply was lost may revive the lease (Infinity); a lost renew only extends an expiry its "now"
 * was still before.
 */
function latestExpiryAfter(same: readonly Op[], refusal: Op, renew: Op): number {
  let at = nowHi(refusal)
  const lostRenews: Op[] = []
  for (const e of same) {
    if (e === renew || e === refusal || !mayExtend(e) || e.op === 'acquire' || !(e.invoke < renew.complete))
      continue
    if (e.outcome === 'ok' && e.complete < refusal.invoke) continue
    if (e.outcome === 'info') {
      if (e.op === 'checkpoint') return Number.POSITIVE_INFINITY
      lostRenews.push(e)
    } else at = Math.max(at, nowHi(e) + e.ttl!)
  }
  // One that lands after the refusal lands on an expired lease: on a server clock its "now" is then
  // past the expiry and it changes nothing; on a client clock its "now" was read as it was sent, and it
  // extends to that + ttl if that was still before the expiry.
  const sentNow = (r: Op) => r.invoke + Math.max(r.offsetAtInvoke, r.offsetAtComplete)
  lostRenews.sort((x, y) => sentNow(x) - sentNow(y))
  for (const r of lostRenews) if (sentNow(r) < at) at = Math.max(at, sentNow(r) + r.ttl!)
  return at
}

/**
 * The earliest expiry the store can have had for a token when an op that completed at `to` read its
 * "now", under the old rule: each extender set expiry = now + ttl, so the last one to land decides,
 * and that is any one that may have landed before (invoked before `to`) and is not certainly
 * followed by an acknowledged one (`landedBefore` the op) invoked after it completed. Returns the
 * bound and the extender that sets it.
 */
function earliestExpiryLastWins(
  same: readonly Op[],
  to: number,
  landedBefore: (z: Op) => boolean,
  lostAcquires: readonly Op[] = [],
): { at: number; by?: Op } {
  const own = same.filter((e) => mayExtend(e) && e.invoke < to)
  const acked = own.filter((e) => e.outcome === 'ok' && landedBefore(e))
  // `lostAcquires`: those that may have taken the token, one of which did, with a bound of its start
  // + ttl. It landed before any record op on its token could: an acknowledged one follows it.
  const extenders = acked.length > 0 ? own : [...own, ...lostAcquires]
  let at = Number.POSITIVE_INFINITY
  let by: Op | undefined
  for (const l of extenders) {
    if (acked.some((z) => z !== l && z.invoke > l.complete)) continue
    const bound = nowLo(l) + l.ttl!
    if (bound < at) {
      at = bound
      by = l
    }
  }
  return by ? { at, by } : { at: Number.NEGATIVE_INFINITY }
}

/**
 * The same under the max rule (renew and checkpoint set max(stored, now + ttl); only release moves
 * the expiry back): every acknowledged extender that landed before counts, whatever came after; and
 * the acquire of the token, if it was one of `lostAcquires` (which, unknown: the smallest bound).
 */
function earliestExpiryMax(
  same: readonly Op[],
  landedBefore: (e: Op) => boolean,
  lostAcquires: readonly Op[] = [],
): { at: number; by?: Op } {
  let at = Number.NEGATIVE_INFINITY
  let by: Op | undefined
  for (const a of lostAcquires) {
    const bound = nowLo(a) + a.ttl!
    if (!by || bound < at) {
      at = bound
      by = a
    }
  }
  for (const e of same) {
    if (!mayExtend(e) || e.outcome !== 'ok' || !landedBefore(e)) continue
    const bound = nowLo(e) + e.ttl!
    if (bound > at) {
      at = bound
      by = e
    }
  }
  return by ? { at, by } : { at }
}

/** Splits a history by workId and checks each. */
export function checkHistory(ops: readonly Op[], options: CheckOptions = {}): Violation[] {
  const byWork = new Map<string, Op[]>()
  for (const op of ops) {
    const list = byWork.get(op.workId) ?? []
    list.push(op)
    byWork.set(op.workId, list)
  }
  const violations: Violation[] = []
  for (const [workId, list] of byWork) violations.push(...checkWorkId(workId, list, options))
  return violations
}

/**
 * Checks one workId's history. Each check is sound (a violation is a real breach of the contract given
 * the recorded intervals; indeterminate ops may have happened at any time after their invocation, or
 * never) but the set is not complete: see docs/torture.md.
 */
export function checkWorkId(workId: string, ops: readonly Op[], options: CheckOptions = {}): Violation[] {
  const tolerance = options.toleranceMs ?? 10
  const out: Violation[] = []
  const add = (check: CheckName, message: string, involved: Op[]) =>
    out.push({ check, workId, message, ops: involved })

  const acquiresOk = ops.filter(isAcquireOk)
  const acquiresInfo = ops.filter(isAcquireInfo)

  // 0. Refusals only where the contract has them: acquire's is LEASE_HELD, the record ops' FENCED
  //    (and renew's LEASE_EXPIRED, check 12a). A failed acquire carries no token, so no check by token
  //    sees one answered FENCED (a driver's failed take reported as fencing, say).
  for (const x of ops) {
    if (x.outcome !== 'fail') continue
    if (x.op === 'acquire' ? x.code !== 'LEASE_HELD' : x.code === 'LEASE_HELD') {
      add(
        'wrong-refusal',
        `${x.op} answered ${x.code}, which ${x.op === 'acquire' ? 'acquire never answers' : 'only acquire answers'}`,
        [x],
      )
    }
  }

  // 1. Every ok acquire got its own token. A record op the store acknowledged proves an acquire of its
  //    token by its holder (stores match both), acknowledged or not: a second holder of a token is a
  //    second acquire that got it. `proof`: per token, the earliest-completing op that proves it.
  const byToken = new Map<bigint, Op>()
  for (const a of acquiresOk) {
    const other = byToken.get(a.token!)
    if (other) add('duplicate-token', `two acquires both got token ${a.token}`, [other, a])
    else byToken.set(a.token!, a)
  }
  const proof = new Map<bigint, Op>()
  {
    const shared = new Set<bigint>()
    for (const x of ops.filter(provesValid).sort((x, y) => x.complete - y.complete)) {
      const t = x.token!
      const first = proof.get(t)
      if (!first) proof.set(t, x)
      const holder = byToken.get(t) ?? first
      if (holder && holder.holder !== x.holder && !shared.has(t)) {
        shared.add(t)
        add(
          'duplicate-token',
          `token ${t} was held by ${holder.holder} and by ${x.holder}: two acquires got it, one with its reply lost`,
          [holder, x],
        )
      }
    }
  }

  // A record op of a holder acknowledged on token t before that holder's acknowledged acquire of t was
  // sent: an earlier acquire of its (one whose reply was lost) had t already, so two acquires got it.
  for (const a of acquiresOk) {
    const p = proof.get(a.token!)
    if (p && p.holder === a.holder && p.complete < a.invoke) {
      add(
        'duplicate-token',
        `token ${a.token} was used by ${a.holder} (its ${p.op} was acknowledged) before the acquire acknowledged with it was sent: two acquires got it`,
        [p, a],
      )
    }
  }

  // 2. Tokens increase in real-time order: an acquire that began after another ended has a larger token,
  // and so has one begun after a record op proved a token (its acquire's reply may have been lost).
  const byComplete = [...acquiresOk, ...proof.values()].sort((x, y) => x.complete - y.complete)
  const byInvoke = [...acquiresOk].sort((x, y) => x.invoke - y.invoke)
  let best: Op | undefined
  let i = 0
  for (const b of byInvoke) {
    while (i < byComplete.length && byComplete[i]!.complete < b.invoke) {
      const a = byComplete[i++]!
      if (!best || a.token! > best.token!) best = a
    }
    if (best && best.token! >= b.token!) {
      const how = best.op === 'acquire' ? 'acquired' : `used (its ${best.op} was acknowledged)`
      add('token-order', `token ${b.token} acquired after token ${best.token} had been ${how}`, [best, b])
    }
  }

  // Every op that carries a token, by token.
  const opsByToken = new Map<bigint, Op[]>()
  for (const op of ops) {
    if (op.token === null) continue
    const list = opsByToken.get(op.token) ?? []
    list.push(op)
    opsByToken.set(op.token, list)
  }
  const tokens = [...opsByToken.keys()].sort(compareTokens)
  // The known tokens: those an acknowledged acquire got, and those only a record op proves, whose
  // acquire was one of the lost ones below. Per token, the earliest-completing op that proves it
  // exists; and the earliest moment it may have been taken (its acquire's invocation; for a proven
  // one, the first of its holder's lost acquires begun before that proof returned: takenFrom).
  const firstInfoAcquire = acquiresInfo.reduce((m, a) => Math.min(m, a.invoke), Number.POSITIVE_INFINITY)
  const evidence = new Map<bigint, Op>()
  for (const x of [...acquiresOk, ...proof.values()]) {
    const seen = evidence.get(x.token!)
    if (!seen || x.complete < seen.complete) evidence.set(x.token!, x)
  }
  const known = [...evidence.keys()].sort(compareTokens)
  // The lost acquires that may have taken a token no acknowledged acquire got: those of the holder of
  // its first proof (stores match holder and token) begun before that proof returned. The one that
  // took it landed in between: its "now" was at least its start (+ its offset) and at most the proof's
  // return (+ its offset), so it set an expiry between those + its ttl.
  const lostByHolder = new Map<string, Op[]>()
  for (const a of acquiresInfo) {
    const list = lostByHolder.get(a.holder) ?? []
    list.push(a)
    lostByHolder.set(a.holder, list)
  }
  const lostTakers = new Map<bigint, Op[]>()
  const lostTakersOf = (t: bigint): Op[] => {
    let found = lostTakers.get(t)
    if (found) return found
    const p = evidence.get(t)
    found =
      !p || byToken.has(t)
        ? []
        : (lostByHolder.get(p.holder) ?? []).filter((a) => a.ttl !== null && a.invoke < p.complete)
    lostTakers.set(t, found)
    return found
  }
  // A token no acknowledged acquire got, used by a holder none of whose lost acquires had begun when
  // that use returned, came from no acquire: the store matched a holder it never handed the token to.
  // (Counting, below, would let another holder's lost acquire explain it.)
  for (const [t, p] of proof) {
    if (byToken.has(t) || lostTakersOf(t).length > 0) continue
    add(
      'token-gap',
      `token ${t} was used by ${p.holder} (its ${p.op} was acknowledged), but none of ${p.holder}'s acquires can have taken it: none began before that reply`,
      [p],
    )
  }
  /** The latest expiry the lost acquire that took `t` can have set (-Infinity: none took it). */
  const lostAcquireLatest = (t: bigint): number => {
    const p = evidence.get(t)
    let at = Number.NEGATIVE_INFINITY
    if (p)
      for (const a of lostTakersOf(t))
        at = Math.max(at, p.complete + Math.max(a.offsetAtInvoke, a.offsetAtComplete) + a.ttl!)
    return at
  }
  // A token only a record op proves was taken by one of its holder's lost acquires (lostTakersOf), not
  // by any holder's: the first of those began when it may have been taken at the earliest. (None: a
  // token-gap above; -Infinity, judging nothing by it.)
  const takenFrom = (t: bigint): number => {
    const acquired = byToken.get(t)
    if (acquired) return acquired.invoke
    const takers = lostTakersOf(t)
    return takers.length > 0
      ? takers.reduce((m, a) => Math.min(m, a.invoke), Number.POSITIVE_INFINITY)
      : Number.NEGATIVE_INFINITY
  }
  // For each token t: the earliest-completing op that proves a later token exists (an ok acquire of a
  // later token, or a record op that proved a later record valid), and the earliest moment a later
  // token may have been taken. Suffix minima over tokens, largest first.
  const laterProof = new Map<bigint, Op | undefined>()
  const laterTaken = new Map<bigint, number>()
  let firstProof: Op | undefined
  let taken = Number.POSITIVE_INFINITY
  for (let k = tokens.length - 1; k >= 0; k--) {
    const t = tokens[k]!
    laterProof.set(t, firstProof)
    laterTaken.set(t, taken)
    const e = evidence.get(t)
    if (!e) continue
    if (!firstProof || e.complete < firstProof.complete) firstProof = e
    taken = Math.min(taken, takenFrom(t))
  }
  // 3. Tokens are consecutive: a token no acknowledged acquire got (missing, or only a record op proves
  //    it) went to an acquire whose reply was lost, one each, which began before a larger token
  //    certainly existed (an acquire that began after another returned got a larger token); it may
  //    have landed any time after it began. Slots by that deadline, filled in its order from the lost
  //    acquires begun before it: the most tokens they can explain. The ones left over may have taken
  //    tokens after the largest known one.
  const lost = [...acquiresInfo].sort((x, y) => x.invoke - y.invoke)
  const lostBefore = (time: number): number =>
    partitionPoint(lost.length, (index) => lost[index]!.invoke < time)
  let spare = BigInt(lost.length)
  // When the earliest lost acquire that no missing token needs began (Infinity: none is spare).
  let spareFrom = Number.POSITIVE_INFINITY
  {
    const slots: { first: bigint; last: bigint; deadline: number; around: Op[] }[] = []
    let deadline = Number.POSITIVE_INFINITY
    let above: Op | undefined
    for (let k = known.length - 1; k >= 0; k--) {
      const t = known[k]!
      const e = evidence.get(t)!
      if (e.complete < deadline) {
        deadline = e.complete
        above = e
      }
      if (!byToken.has(t)) slots.push({ first: t, last: t, deadline, around: [e] })
      const below = k > 0 ? known[k - 1]! : 0n
      if (t > below + 1n) {
        const around = k > 0 ? [evidence.get(below)!, above!] : [above!]
        slots.push({ first: below + 1n, last: t - 1n, deadline, around })
      }
    }
    slots.sort((x, y) => x.deadline - y.deadline)
    // Greedy by deadline, each slot filled from the lost acquires begun before its deadline: the most
    // missing tokens they explain (used), and the slots left short.
    let used = 0n
    let count = 0n
    const unexplained: typeof slots = []
    for (const slot of slots) {
      const size = slot.last - slot.first + 1n
      const available = BigInt(lostBefore(slot.deadline)) - used
      const take = available < size ? available : size
      used += take
      if (take < size) {
        unexplained.push(slot)
        count += size - take
      }
    }
    spare -= used
    // A spare one may be any lost acquire the others can stand in for, and the earliest such opens the
    // window after the largest known token (one that a missing token needs is not free to be there).
    // The greedy's total is the least, over k, of the acquires begun before slot k's deadline plus the
    // sizes of the slots after k; leaving out an acquire lowers the first term of every slot whose
    // deadline is after it began, so it is spare when each of those terms exceeds the total.
    if (spare > 0n) {
      const terms: bigint[] = []
      let after = slots.reduce((sum, slot) => sum + slot.last - slot.first + 1n, 0n)
      for (const slot of slots) {
        after -= slot.last - slot.first + 1n
        terms.push(BigInt(lostBefore(slot.deadline)) + after)
      }
      const leastFrom: bigint[] = new Array(terms.length + 1)
      for (let k = terms.length - 1; k >= 0; k--) {
        const later = leastFrom[k + 1]
        leastFrom[k] = later !== undefined && later < terms[k]! ? later : terms[k]!
      }
      for (const candidate of lost) {
        const k = partitionPoint(slots.length, (index) => slots[index]!.deadline <= candidate.invoke)
        const least = leastFrom[k]
        if (least === undefined || least > used) {
          spareFrom = candidate.invoke
          break
        }
      }
    }
    if (unexplained.length > 0) {
      const which = unexplained
        .sort((x, y) => compareTokens(x.first, y.first))
        .slice(0, 5)
        .map((x) => (x.first === x.last ? `${x.first}` : `${x.first}..${x.last}`))
      add(
        'token-gap',
        `${count} skipped token(s) (${which.join(', ')}${unexplained.length > 5 ? ', ...' : ''}) went to no acquire: more than the ${lost.length} indeterminate acquires can explain (one can have taken a token only if it began before a larger one was handed out)`,
        [...new Set(unexplained.slice(0, 2).flatMap((x) => x.around))],
      )
    } else {
      // The count above lets any lost acquire fill any slot; but one acquire takes one token, and the
      // store matches holder and token: a token only a record op proves went to one of its holder's
      // lost acquires begun before its slot's deadline, a distinct one per token, and the missing
      // tokens to the others. Per holder, each such token (by deadline) takes the latest of its
      // holder's begun before it, which leaves the earliest ones free for the missing tokens; those
      // then fill by deadline from what is left. (Tokens none of whose holder's can have taken them
      // are token-gaps above already.)
      const mine = new Map<string, typeof slots>()
      const missing: typeof slots = []
      for (const slot of slots) {
        if (!evidence.has(slot.first)) missing.push(slot)
        else if (lostTakersOf(slot.first).length > 0) {
          const holder = evidence.get(slot.first)!.holder
          mine.set(holder, [...(mine.get(holder) ?? []), slot])
        }
      }
      const matched = new Set<Op>()
      let short: { holder: string; tokens: (typeof slots)[number][]; begun: number; own: Op[] } | undefined
      for (const [holder, list] of mine) {
        const own = (lostByHolder.get(holder) ?? []).filter((a) => a.ttl !== null)
        own.sort((x, y) => x.invoke - y.invoke)
        const begun: Op[] = []
        let j = 0
        for (let n = 0; n < list.length; n++) {
          const slot = list[n]!
          while (j < own.length && own[j]!.invoke < slot.deadline) begun.push(own[j++]!)
          const latest = begun.pop()
          if (latest) matched.add(latest)
          else short ??= { holder, tokens: list.slice(0, n + 1), begun: j, own }
        }
      }
      if (short) {
        const { holder, tokens, begun, own } = short
        const last = tokens.at(-1)!
        add(
          'token-gap',
          `${holder} used ${tokens.length} token(s) (${tokens.map((x) => x.first).join(', ')}) that only its acquires whose reply was lost can have taken, one each, but only ${begun} of ${holder}'s lost acquires began before token ${last.first} certainly existed`,
          [...new Set([...tokens.slice(-2).flatMap((x) => x.around), ...own.slice(0, Math.max(begun, 1))])],
        )
      } else {
        const free = lost.filter((a) => !matched.has(a))
        let need = 0n
        for (const slot of missing) {
          need += slot.last - slot.first + 1n
          const have = partitionPoint(free.length, (index) => free[index]!.invoke < slot.deadline)
          if (need > BigInt(have)) {
            const which = slot.first === slot.last ? `${slot.first}` : `${slot.first}..${slot.last}`
            add(
              'token-gap',
              `skipped token(s) ${which} went to no acquire: of the indeterminate acquires begun before a larger token certainly existed, ${have} are left over by the tokens their own holders used (one acquire, one token), and ${need} missing token(s) need them`,
              [...slot.around],
            )
            break
          }
        }
      }
    }
  }
  // Acquires whose reply was lost may each have taken one token that nobody saw, at one moment after
  // their invocation, holding the lease from then until that token's lease ended (nobody had its
  // record, so only its ttl or a successor ended it). A hidden token lies where a token is missing:
  // between two known ones k < m, taken after k may have been taken and before m certainly existed;
  // or, if there are more lost acquires than missing and proven-only tokens, after the largest known
  // token. Each place is a window in which a hidden lease may have existed; outside them, a lost
  // acquire explains nothing.
  // And a hidden token above k is taken only once k's lease is free: not before k's acknowledged
  // acquire's expiry (on the largest clock offset a lost acquire read; the expiry never moves back but
  // by a release), unless a release of k may have landed first.
  const lostOffsetMax = acquiresInfo.reduce(
    (m, a) => Math.max(m, a.offsetAtInvoke, a.offsetAtComplete),
    Number.NEGATIVE_INFINITY,
  )
  const freeFrom = (k: bigint): number => {
    const acquired = byToken.get(k)
    // A token only a record op proves lasted its ttl from whichever of its takers took it.
    const takers = acquired ? [acquired] : lostTakersOf(k)
    if (takers.length === 0 || takers.some((a) => a.ttl === null)) return Number.NEGATIVE_INFINITY
    let at = takers.reduce((m, a) => Math.min(m, nowLo(a) + a.ttl!), Number.POSITIVE_INFINITY)
    at -= lostOffsetMax + tolerance
    for (const r of opsByToken.get(k) ?? []) {
      if (r.op === 'release' && mayHaveHappened(r)) at = Math.min(at, r.invoke)
    }
    return at
  }
  const hidden: { from: number; to: number; above: bigint }[] = []
  {
    let belowFrom = Number.NEGATIVE_INFINITY
    let belowToken = 0n
    for (const t of known) {
      if (t > belowToken + 1n) {
        const from = Math.max(belowFrom, firstInfoAcquire, freeFrom(belowToken))
        const to = evidence.get(t)!.complete
        if (from < to) hidden.push({ from, to, above: belowToken })
      }
      belowFrom = takenFrom(t)
      belowToken = t
    }
    if (spare > 0n) {
      const from = Math.max(belowFrom, spareFrom, freeFrom(belowToken))
      hidden.push({ from, to: Number.POSITIVE_INFINITY, above: belowToken })
    }
  }
  const hiddenAbove = new Map(hidden.map((w) => [w.above, w]))
  hidden.sort((x, y) => x.from - y.from)
  const hiddenReach: number[] = []
  for (const w of hidden) hiddenReach.push(Math.max(hiddenReach[hiddenReach.length - 1] ?? -Infinity, w.to))
  /** Whether a hidden lease may have existed at some moment of (`from`, `to`). */
  const mayBeHidden = (from: number, to: number): boolean => {
    const lo = partitionPoint(hidden.length, (index) => hidden[index]!.from < to)
    return lo > 0 && hiddenReach[lo - 1]! > from
  }

  /**
   * For a token no op proves (only failed ops carry it: a LEASE_HELD that named it, say), which lies
   * inside a hidden window: when a hidden token above it, in the same window, may have been taken.
   * Inside a gap below a known token m that needs room below m; above the largest known token, a spare
   * lost acquire besides the ones that took the tokens up to it. (Infinity: none may have.)
   */
  const hiddenAboveWithin = (t: bigint): number => {
    if (evidence.has(t)) return Number.POSITIVE_INFINITY
    const index = firstAtLeast(known, t)
    const below = index > 0 ? known[index - 1]! : 0n
    const window = hiddenAbove.get(below)
    if (!window) return Number.POSITIVE_INFINITY
    const above = known[index]
    const room = above === undefined ? spare > t - below : t + 1n < above
    return room ? window.from : Number.POSITIVE_INFINITY
  }

  /**
   * Token `t`'s lease can only have ended by a release whose reply was lost (`why`, shown by `proof`):
   * the next token's holder must then read `cleanHandoff: true`.
   */
  /** Per token, the earliest FENCED that only its release (reply lost) can explain: it landed by then. */
  const releasedBy = new Map<bigint, Op>()
  const releaseProven = (t: bigint, proof: Op, why: string): void => {
    const earlier = releasedBy.get(t)
    if (!earlier || proof.complete < earlier.complete) releasedBy.set(t, proof)
    for (const r of opsByToken.get(t + 1n) ?? []) {
      if (r.clean !== false) continue
      add('clean-handoff', `cleanHandoff false, but token ${t} can only have ended by its release: ${why}`, [
        proof,
        r,
      ])
    }
  }

  // Per token, the op whose return proves its lease certainly ended: a later token's, its release, or
  // a FENCED answer on it (taken over, released or revoked: validity never comes back).
  const ended = new Map<bigint, Op>()
  const fencedAt = new Map<bigint, number>()
  for (const t of tokens) {
    const same = opsByToken.get(t)!
    // When the lease of token t certainly ended: superseded, released by an acknowledged release, or
    // answered FENCED.
    let end = laterProof.get(t)
    for (const r of same) {
      const fenced = r.outcome === 'fail' && r.code === 'FENCED'
      if (fenced) fencedAt.set(t, Math.min(fencedAt.get(t) ?? Number.POSITIVE_INFINITY, r.complete))
      if ((fenced || (r.op === 'release' && r.outcome === 'ok')) && (!end || r.complete < end.complete))
        end = r
    }
    if (end) ended.set(t, end)
    // The earliest moment something may have ended it: an acquire of a later known token (acknowledged
    // or proven), a lost acquire that may have taken a missing token right after t, or a release of t
    // that may have landed.
    const mayEndOtherwise = Math.min(laterTaken.get(t)!, hiddenAbove.get(t)?.from ?? hiddenAboveWithin(t))
    let mayEnd = mayEndOtherwise
    for (const r of same) if (r.op === 'release' && mayHaveHappened(r)) mayEnd = Math.min(mayEnd, r.invoke)

    // 4b. Two acknowledged releases of one record: whichever landed second found it released.
    const released = same.filter((r) => r.op === 'release' && r.outcome === 'ok')
    const firstDone = released.reduce<Op | undefined>(
      (a, r) => (a && a.complete <= r.complete ? a : r),
      undefined,
    )
    for (const r of released) {
      if (r !== firstDone && r.invoke <= firstDone!.complete) {
        add(
          'valid-after-end',
          `two releases of token ${t} were acknowledged: the later to land found it released`,
          [firstDone!, r],
        )
      }
    }

    for (const x of same) {
      if (x.op === 'acquire') continue
      // 4. No record op succeeds after its lease certainly ended (taken over or released).
      if (provesValid(x) && end && end !== x && x.invoke > end.complete) {
        const what =
          end.token !== t
            ? `superseded by token ${end.token}`
            : end.outcome === 'fail'
              ? `answered FENCED (its ${end.op})`
              : 'released'
        add('valid-after-end', `${x.op} with token ${t} succeeded after the lease was ${what}`, [end, x])
      }
      // 5. FENCED only if something could have ended the lease before the reply.
      if (x.outcome === 'fail' && x.code === 'FENCED' && !(mayEnd < x.complete)) {
        add(
          'fenced-while-valid',
          `${x.op} with token ${t} was FENCED while nothing could have ended its lease`,
          [x],
        )
      } else if (x.outcome === 'fail' && x.code === 'FENCED' && !(mayEndOtherwise < x.complete)) {
        // Only a release whose reply was lost can have ended it: that release landed, before the next
        // token was taken, so the next holder's handoff was clean.
        releaseProven(t, x, `${x.op} with token ${t} was answered FENCED before anything else could end it`)
      }
      // 12a. LEASE_EXPIRED is renew's answer only: a checkpoint revives an expired lease nobody took.
      if (x.op !== 'renew' && x.outcome === 'fail' && x.code === 'LEASE_EXPIRED') {
        add('expired-while-live', `${x.op} of token ${t} answered LEASE_EXPIRED, which only renew answers`, [
          x,
        ])
      }
      if (x.op !== 'renew') continue
      // 11. A renew is acknowledged only before the expiry (a checkpoint may revive an expired lease;
      //     a renew may not). For a token only a lost acquire took, that acquire landed before the
      //     token's first proof returned: the latest expiry it can have set is that return (+ its
      //     offset) + its ttl. (Its start would be a lower bound, the wrong direction here.)
      const acquired = byToken.has(t) ? undefined : lostAcquireLatest(t)
      if (x.outcome === 'ok' && (acquired === undefined || Number.isFinite(acquired))) {
        const latest = latestExpiry(same, x.complete, x, acquired)
        if (nowLo(x) >= latest + tolerance) {
          add(
            'renewed-after-expiry',
            latest === Number.NEGATIVE_INFINITY
              ? `renew of token ${t} was acknowledged before the acquire that took the token was sent`
              : `renew of token ${t} was acknowledged ${(nowLo(x) - latest).toFixed(1)} ms after its lease certainly expired`,
            [...same.filter((e) => mayExtend(e) && e.invoke < x.complete && e !== x), x],
          )
        }
      }
      // 11b. After a renew answered LEASE_EXPIRED, the stored expiry was at most that renew's "now";
      //      only what may have landed since can move it: a checkpoint (which revives an expired
      //      lease), or a lost renew whose "now" was read before the expiry (client clocks).
      if (x.outcome === 'ok') {
        const refusal = same
          .filter(
            (r) =>
              r.op === 'renew' && r.outcome === 'fail' && r.code === 'LEASE_EXPIRED' && r.complete < x.invoke,
          )
          .reduce<Op | undefined>(
            (latest, r) => (!latest || r.complete > latest.complete ? r : latest),
            undefined,
          )
        if (refusal) {
          const latest = latestExpiryAfter(same, refusal, x)
          if (nowLo(x) >= latest + tolerance) {
            add(
              'renewed-after-expiry',
              `renew of token ${t} was acknowledged ${(nowLo(x) - latest).toFixed(1)} ms after its lease certainly expired: a renew had been answered LEASE_EXPIRED, and nothing that may have landed since could revive it`,
              [refusal, x],
            )
          }
        }
      }
      // 12. LEASE_EXPIRED only after the expiry. Under the old rule the last extender to land decides;
      //     under the max rule every acknowledged one that landed before counts. For a token only a
      //     lost acquire took, that acquire (its holder's, begun before the first proof returned; the
      //     smallest bound if several may have) certainly landed before this renew, setting at least
      //     its start (+ its offset) + ttl: a LOWER bound, the direction a violation needs (its latest
      //     expiry would be unsound here). Lost renews and checkpoints only lower it, as for
      //     early-takeover. None of its holder's and nothing acknowledged: no lower bound at all.
      //     A release that may have landed changes nothing here: LEASE_EXPIRED proves the record was
      //     not released when the renew was judged (a released one answers FENCED).
      if (x.outcome === 'fail' && x.code === 'LEASE_EXPIRED') {
        const seen = nowHi(x)
        const landed = (z: Op) => z.complete < x.invoke
        const acquiredBy = byToken.has(t) ? [] : lostTakersOf(t)
        const unknown =
          !byToken.has(t) &&
          acquiredBy.length === 0 &&
          !same.some((z) => mayExtend(z) && z.outcome === 'ok' && landed(z))
        const last = unknown
          ? { at: Number.NEGATIVE_INFINITY }
          : earliestExpiryLastWins(same, x.complete, landed, acquiredBy)
        const max = earliestExpiryMax(same, landed, acquiredBy)
        const how = byToken.has(t) ? '' : ` (token ${t}'s acquire lost its reply)`
        if (last.by && seen + tolerance < last.at) {
          add(
            'expired-while-live',
            `renew of token ${t} answered LEASE_EXPIRED ${(last.at - seen).toFixed(1)} ms before its lease could have expired${how}`,
            [last.by, x],
          )
        } else if (max.by && seen + tolerance < max.at) {
          add(
            'expiry-moved-back',
            `renew of token ${t} answered LEASE_EXPIRED ${(max.at - seen).toFixed(1)} ms before the expiry ${max.by.outcome === 'ok' ? `an acknowledged ${max.by.op}` : 'its acquire'} had set${how}`,
            [max.by, x],
          )
        }
      }
    }
  }

  // 6. Checkpoint writes of different holders never interleave: once a newer token's checkpoint was
  //    acknowledged, no checkpoint of an older token begun afterwards is acknowledged.
  const checkpointsOk = ops.filter((op) => op.op === 'checkpoint' && op.outcome === 'ok')
  const ckByComplete = [...checkpointsOk].sort((x, y) => x.complete - y.complete)
  const ckByInvoke = [...checkpointsOk].sort((x, y) => x.invoke - y.invoke)
  let newest: Op | undefined
  i = 0
  for (const c of ckByInvoke) {
    while (i < ckByComplete.length && ckByComplete[i]!.complete < c.invoke) {
      const a = ckByComplete[i++]!
      if (!newest || a.token! > newest.token!) newest = a
    }
    if (newest && newest.token! > c.token!) {
      add(
        'interleaved-checkpoints',
        `a checkpoint with token ${c.token} was acknowledged after one with token ${newest.token}`,
        [newest, c],
      )
    }
  }

  // 7. Reads: the state is the last checkpoint that landed; a failed one is never visible. A value is
  //    one checkpoint of one lease, which the Leaser may send more than once (a retry after a store
  //    error): it was sent first at its first invocation, and may have landed until the last
  //    completion of any attempt that may have landed. An attempt whose reply was lost may have
  //    landed only if it was sent before its lease certainly ended (taken over or released): after
  //    that the store fences it. A lease's holder is one process sending one call after another, so
  //    the order of first invocations is the order the holder sent them.
  const sent = new Map<string, { token: bigint; first: number; lastLanding: number; attempts: Op[] }>()
  const sentAfterEnd = (c: Op): Op | undefined => {
    const end = ended.get(c.token!)
    return c.outcome === 'info' && end && c.invoke > end.complete ? end : undefined
  }
  for (const c of ops) {
    if (c.op !== 'checkpoint' || c.value === null) continue
    const s = sent.get(c.value) ?? { token: c.token!, first: c.invoke, lastLanding: -Infinity, attempts: [] }
    s.first = Math.min(s.first, c.invoke)
    if (mayHaveHappened(c) && !sentAfterEnd(c)) s.lastLanding = Math.max(s.lastLanding, c.complete)
    s.attempts.push(c)
    sent.set(c.value, s)
  }
  const okByToken = new Map<bigint, Op[]>()
  for (const c of checkpointsOk) {
    const list = okByToken.get(c.token!) ?? []
    list.push(c)
    okByToken.set(c.token!, list)
  }
  // Loops below go over the tokens that occur, never over every value in between: a token may be huge.
  const okTokens = [...okByToken.keys()].sort(compareTokens)
  const cleanByToken = new Map<bigint, Op>()
  // Nothing stores "no state": once a read returned some, every read begun later returns some.
  const firstStateRead = ops
    .filter((r) => isRead(r) && r.read !== null)
    .reduce<Op | undefined>((first, r) => (!first || r.complete < first.complete ? r : first), undefined)
  // Nor does it go back: once a read returned a state, a read begun later returns it or a newer one
  // (a larger token's, or one its holder sent later), even where no checkpoint's reply said it landed.
  const sentLater = (x: { token: bigint; first: number }, y: { token: bigint; first: number }) =>
    x.token > y.token || (x.token === y.token && x.first > y.first)
  const stateReads = ops
    .filter((r) => isRead(r) && r.read !== null && sent.has(r.read))
    .sort((x, y) => x.complete - y.complete)
  // Reads by when they returned, to find the ones that returned before a read began.
  const readsByComplete = ops.filter(isRead).sort((x, y) => x.complete - y.complete)
  /**
   * A read that began after `source`'s lease had certainly ended, returned before `r` began, and did
   * not see `source` (no state, or an older one): `source` had not landed by then, and the store
   * fences it from then on, so it can never land.
   */
  const missedAfterEnd = (source: { token: bigint; first: number }, r: Op): Op | undefined => {
    const missed = firstMissed(source)
    return missed && missed.complete < r.invoke ? missed : undefined
  }
  // The first such read to return, whichever read asks: a later `r` only lets more of them count, so
  // the first that returned before `r` began is this one, or there is none. One scan per source, not
  // one per read of it (quadratic in the reads of a workId).
  const missedBySource = new Map<object, Op | null>()
  const firstMissed = (source: { token: bigint; first: number }): Op | undefined => {
    let missed = missedBySource.get(source)
    if (missed === undefined) {
      const end = ended.get(source.token)
      missed =
        (end &&
          readsByComplete.find((r0) => {
            // After the end: begun after it returned, or a read of a larger token, which its acquire
            // let in only once this token's lease had ended (that acquire's own read included).
            if (r0.invoke <= end.complete && r0.token! <= source.token) return false
            const seen = r0.read === null ? undefined : sent.get(r0.read)
            return r0.read === null || (seen !== undefined && sentLater(source, seen))
          })) ??
        null
      missedBySource.set(source, missed)
    }
    return missed ?? undefined
  }
  const newestReadBy: Op[] = []
  for (const r of stateReads) {
    const before = newestReadBy.at(-1)
    newestReadBy.push(before && !sentLater(sent.get(r.read!)!, sent.get(before.read!)!) ? before : r)
  }
  // A read that returned also came before every read of a larger token, whenever those began: it was
  // let in while its token was valid, so before the larger token's acquire landed, and so before any
  // read of that token. The same two rules, with "earlier" by token (a read by the superseded holder
  // that overlapped the takeover, say, which the reads by time miss).
  const stateReadsByToken = [...stateReads].sort((x, y) =>
    x.token! < y.token! ? -1 : x.token! > y.token! ? 1 : 0,
  )
  const newestByToken: Op[] = []
  for (const r of stateReadsByToken) {
    const before = newestByToken.at(-1)
    newestByToken.push(before && !sentLater(sent.get(r.read!)!, sent.get(before.read!)!) ? before : r)
  }
  /** The newest state read by a token below `t`, and the read that returned it. */
  const newestBelow = (t: bigint): Op | undefined => {
    const below = partitionPoint(stateReadsByToken.length, (index) => stateReadsByToken[index]!.token! < t)
    return below > 0 ? newestByToken[below - 1] : undefined
  }
  for (const r of ops) {
    if (!isRead(r)) continue
    const t = r.token!
    const seenBefore = partitionPoint(stateReads.length, (index) => stateReads[index]!.complete < r.invoke)
    const newest = seenBefore > 0 ? newestReadBy[seenBefore - 1]! : undefined
    const own = r.read !== null ? sent.get(r.read) : undefined
    if (newest && own && sentLater(sent.get(newest.read!)!, own)) {
      add(
        'stale-read',
        `token ${t} read ${JSON.stringify(r.read)} though an earlier read had already returned ${JSON.stringify(newest.read)}, stored after it`,
        [newest, r],
      )
    }
    if (r.read === null && firstStateRead && firstStateRead.complete < r.invoke) {
      add(
        'stale-read',
        `token ${t} read no state though a read had already returned ${JSON.stringify(firstStateRead.read)}`,
        [firstStateRead, r],
      )
    }
    // The same, by token: only where the reads by time found nothing, so a breach is said once.
    const earlierByToken = newestBelow(t)
    if (earlierByToken && !(newest && own && sentLater(sent.get(newest.read!)!, own))) {
      if (own && sentLater(sent.get(earlierByToken.read!)!, own)) {
        add(
          'stale-read',
          `token ${t} read ${JSON.stringify(r.read)} though token ${earlierByToken.token}'s read, which came before any read of token ${t}, had returned ${JSON.stringify(earlierByToken.read)}, stored after it`,
          [earlierByToken, r],
        )
      }
    }
    if (r.read === null && earlierByToken && !(firstStateRead && firstStateRead.complete < r.invoke)) {
      add(
        'stale-read',
        `token ${t} read no state though token ${earlierByToken.token}'s read, which came before any read of token ${t}, had returned ${JSON.stringify(earlierByToken.read)}`,
        [earlierByToken, r],
      )
    }
    const source = r.read !== null ? sent.get(r.read) : undefined
    if (r.read !== null) {
      if (!source) {
        add('phantom-state', `read state ${JSON.stringify(r.read)} that no checkpoint wrote`, [r])
        continue
      }
      if (source.lastLanding === -Infinity) {
        const failed = source.attempts.filter((c) => c.outcome === 'fail').map((c) => c.code)
        const ends = [...new Set(source.attempts.map(sentAfterEnd).filter((e) => e !== undefined))]
        const what = [
          ...(failed.length > 0 ? [`failed with ${failed.join(', ')}`] : []),
          ...(ends.length > 0 ? [`was sent after token ${source.token}'s lease had ended`] : []),
        ]
        add('failed-checkpoint-visible', `read the state of a checkpoint that ${what.join(' or ')}`, [
          ...source.attempts,
          ...ends,
          r,
        ])
        continue
      }
      const missed = missedAfterEnd(source, r)
      if (missed) {
        add(
          'failed-checkpoint-visible',
          `read the state of a checkpoint of token ${source.token} that a read begun after that lease had ended did not see (${missed.read === null ? 'no state' : JSON.stringify(missed.read)}): it had not landed, and could not after`,
          [...source.attempts, ended.get(source.token)!, missed, r],
        )
        continue
      }
      // An acquire reads the state its own write replaces: never one written under the token it takes.
      if (source.token > t || (r.op === 'acquire' && source.token === t) || source.first > r.complete) {
        add('read-from-future', `token ${t} read a state written later (token ${source.token})`, [
          source.attempts[0]!,
          r,
        ])
        continue
      }
    }
    // A later acknowledged checkpoint that certainly landed between the source and this read; or,
    // of the source's own lease, one sent after it (the contract's checkpoint order).
    const from = source?.token ?? 0n
    const writer = source?.attempts.find((c) => c.outcome === 'ok') ?? source?.attempts[0]
    for (let k = firstAtLeast(okTokens, from); k < okTokens.length && okTokens[k]! <= t; k++) {
      for (const c2 of okByToken.get(okTokens[k]!)!) {
        if (c2.value === r.read) continue
        const beforeRead = c2.token! < t || c2.complete < r.invoke
        if (!beforeRead) continue
        const afterSource = !source || c2.token! > source.token || source.lastLanding < c2.invoke
        if (afterSource) {
          add(
            'stale-read',
            `token ${t} read ${JSON.stringify(r.read)} though an acknowledged later checkpoint wrote ${JSON.stringify(c2.value)}`,
            writer ? [writer, c2, r] : [c2, r],
          )
        } else if (source && c2.token === source.token && sent.get(c2.value!)!.first > source.first) {
          add(
            'checkpoint-rollback',
            `token ${t} read ${JSON.stringify(r.read)} though token ${c2.token}'s holder sent ${JSON.stringify(c2.value)} after it and it was acknowledged`,
            [writer!, c2, r],
          )
        }
      }
    }
    // 8. cleanHandoff is whether the previous lease ended by release.
    if (r.clean !== null) {
      const previous = (opsByToken.get(t - 1n) ?? []).filter((e) => e.op === 'release')
      if (t === 1n && !r.clean)
        add('clean-handoff', 'token 1 (no previous lease) read cleanHandoff false', [r])
      // The store sets it as token t is acquired: a release that began after t certainly existed
      // (after this read returned, at the latest) found t-1 superseded and changed nothing.
      // And one sent after t-1 was answered FENCED came after its lease had ended some other way.
      const taken = Math.min(
        evidence.get(t)?.complete ?? r.complete,
        fencedAt.get(t - 1n) ?? Number.POSITIVE_INFINITY,
      )
      if (t > 1n && r.clean && !previous.some((e) => mayHaveHappened(e) && e.invoke < taken)) {
        add(
          'clean-handoff',
          `cleanHandoff true but token ${t - 1n} was not released before token ${t} was acquired (or before it was answered FENCED)`,
          [...previous, r],
        )
      }
      if (r.clean === false && previous.some((e) => e.outcome === 'ok')) {
        add('clean-handoff', `cleanHandoff false but token ${t - 1n} was released`, [...previous, r])
      }
      const first = cleanByToken.get(t)
      if (first && first.clean !== r.clean)
        add('clean-handoff', `cleanHandoff of token ${t} changed`, [first, r])
      else if (!first) cleanByToken.set(t, r)
    }
  }

  // 9. No takeover before the previous lease expired by the store's clock. The acquire A of token t
  //    read "now" <= A.complete (+ A's offset); each extender L of the lease before (its acquire, a
  //    renew or a checkpoint) set expiry from a "now" >= L.invoke (+ L's offset). The lease before is
  //    that of the nearest lower token k with an acknowledged extender to bound its expiry (an
  //    acknowledged renew or checkpoint bounds it whether or not its acquire was seen); if tokens lie
  //    between, lost acquires took them, the first after k ended, before A returned, on its own clock.
  //    A token only a record op proves was taken by a lost acquire before that op returned. Skipped if
  //    k may have been released, the one thing that moves an expiry back.
  //    If k itself is such a token, that lost acquire (one of its holder's begun before k's first
  //    proof returned, and before A returned: a later one got a token above t) is an extender too,
  //    certainly landed, with a bound of its start (+ offset) + ttl: a LOWER bound of the expiry it
  //    set, the direction a violation needs. Lost renews and checkpoints of k only enter the
  //    old rule's minimum as extenders that may have landed last: they can lower that bound, never
  //    raise it, as a lost reply proves nothing live.
  //    early-takeover (either rule): the last extender to land set the expiry, so take the smallest
  //    bound over every one that may have landed and is not certainly followed by an acknowledged one.
  //    expiry-moved-back (the max rule): every acknowledged extender counts, whatever landed after it.
  const bounded = tokens.filter(
    (t) => opsByToken.get(t)!.some((e) => e.outcome === 'ok' && mayExtend(e)) || lostTakersOf(t).length > 0,
  )
  // The running largest clock offset of the lost acquires by invocation: the "now" a hidden acquire read.
  const lostOffset: number[] = []
  for (const l of lost) {
    lostOffset.push(
      Math.max(lostOffset.at(-1) ?? Number.NEGATIVE_INFINITY, l.offsetAtInvoke, l.offsetAtComplete),
    )
  }
  /** The latest "now" a lost acquire that landed by `by` can have read. */
  const hiddenNow = (by: number): number => {
    const n = lostBefore(by)
    return n > 0 ? by + lostOffset[n - 1]! : Number.NEGATIVE_INFINITY
  }
  const takers = [
    ...acquiresOk.map((a) => ({ t: a.token!, by: a.complete, seen: nowHi(a), op: a, lost: false })),
    ...known
      .filter((t) => !byToken.has(t))
      .map((t) => {
        const p = evidence.get(t)!
        const seen = hiddenNow(p.complete)
        return { t, by: p.complete, seen: Number.isFinite(seen) ? seen : nowHi(p), op: p, lost: true }
      }),
  ]
  for (const { t, by, seen: seenSelf, op: a, lost: hiddenTaker } of takers) {
    const k = firstAtLeast(bounded, t) - 1
    if (k < 0) continue
    const prev = bounded[k]!
    const previous = opsByToken.get(prev)!
    const mayBeReleased = previous.some((e) => e.op === 'release' && mayHaveHappened(e) && e.invoke < by)
    // Released for certain (acknowledged): nothing to judge. A release whose reply was lost is judged
    // below: if the takeover came before the lease could have expired, that release landed first.
    if (mayBeReleased && (prev !== t - 1n || previous.some((e) => e.op === 'release' && e.outcome === 'ok')))
      continue
    const seen = prev === t - 1n ? seenSelf : Math.max(seenSelf, hiddenNow(by))
    // An acknowledged extender invoked before A returned landed before A took over, or it was itself
    // acknowledged on a superseded record.
    const acquiredBy = lostTakersOf(prev).filter((l) => l.invoke < by)
    const last = earliestExpiryLastWins(previous, by, () => true, acquiredBy)
    const max = earliestExpiryMax(previous, (e) => e.invoke < by, acquiredBy)
    const how =
      (hiddenTaker ? ` (by an acquire whose reply was lost; ${a.op} of token ${t} acknowledged)` : '') +
      (byToken.has(prev) ? '' : ` (token ${prev}'s acquire lost its reply)`) +
      (prev + 1n === t - 1n
        ? ` (token ${prev + 1n} went to an acquire whose reply was lost)`
        : prev < t - 1n
          ? ` (tokens ${prev + 1n}..${t - 1n} went to acquires whose reply was lost)`
          : '')
    if (mayBeReleased) {
      if ((last.by && seen < last.at - tolerance) || (max.by && seen < max.at - tolerance)) {
        releaseProven(prev, a, `token ${t} was taken before token ${prev}'s lease could have expired`)
      }
    } else if (last.by && seen < last.at - tolerance) {
      add(
        'early-takeover',
        `token ${t} was acquired ${(last.at - seen).toFixed(1)} ms before token ${prev}'s lease could have expired${how}`,
        [last.by, a],
      )
    } else if (max.by && seen < max.at - tolerance) {
      add(
        'expiry-moved-back',
        `token ${t} was acquired ${(max.at - seen).toFixed(1)} ms before the expiry ${max.by.outcome === 'ok' ? `an acknowledged ${max.by.op}` : 'its acquire'} of token ${prev} had set${how}`,
        [max.by, a],
      )
    }
  }

  // 9b. A hidden lease ends only by its ttl: its token went to a lost acquire, and no op ever carried
  //     it (nobody had its record to renew or release it). Whichever lost acquire begun before the
  //     takeover returned took it, it landed after it began, so the lease lasted at least until that
  //     start (+ its offset) + its ttl; the takeover came no earlier than the smallest such end. A
  //     taker only record ops prove is itself one of its holder's lost acquires, landed by its first
  //     proof's return (its "now" at most the latest a lost acquire landed by then can have read); it
  //     cannot have taken the hidden token too, so the smallest end leaves out the one it may be.
  const hiddenTakers = [
    ...acquiresOk.map((a) => ({ t: a.token!, by: a.complete, seen: nowHi(a), op: a, itself: [] as Op[] })),
    ...known
      .filter((t) => !byToken.has(t) && lostTakersOf(t).length > 0)
      .map((t) => {
        const p = evidence.get(t)!
        return { t, by: p.complete, seen: hiddenNow(p.complete), op: p, itself: lostTakersOf(t) }
      }),
  ]
  for (const { t, by, seen, op: a, itself } of hiddenTakers) {
    const below = t - 1n
    if (below < 1n || opsByToken.has(below)) continue
    // The two smallest ends, so that leaving out any one acquire is a lookup.
    let first: { end: number; by: Op } | undefined
    let second: { end: number; by: Op } | undefined
    for (const l of lost) {
      if (!(l.invoke < by)) break
      if (l.ttl === null) continue
      const candidate = { end: nowLo(l) + l.ttl, by: l }
      if (!first || candidate.end < first.end) [first, second] = [candidate, first]
      else if (!second || candidate.end < second.end) second = candidate
    }
    const earliest = itself.length > 0 && itself.every((l) => l === first?.by) ? second : first
    if (earliest && seen < earliest.end - tolerance) {
      add(
        'early-takeover',
        `token ${t} was acquired ${(earliest.end - seen).toFixed(1)} ms before token ${below}'s lease could have expired (it went to an acquire whose reply was lost, and no acquire that may have taken it can have ended sooner)${
          itself.length > 0 ? ` (by an acquire whose reply was lost; ${a.op} of token ${t} acknowledged)` : ''
        }`,
        [earliest.by, a],
      )
    }
  }

  /**
   * The latest expiry a token's lease can have had when `op` read its "now", given the last renew of
   * it answered LEASE_EXPIRED before `op` began (Infinity: none was): as for 11b, that refusal's "now"
   * moved only by what may have landed since.
   */
  const latestAfterRefusal = (same: readonly Op[], op: Op): number => {
    let refusal: Op | undefined
    for (const r of same) {
      if (r.op !== 'renew' || r.outcome !== 'fail' || r.code !== 'LEASE_EXPIRED' || !(r.complete < op.invoke))
        continue
      if (!refusal || r.complete > refusal.complete) refusal = r
    }
    return refusal ? latestExpiryAfter(same, refusal, op) : Number.POSITIVE_INFINITY
  }

  // 10. LEASE_HELD only if the lease may have been held at some moment of the call: by a known token
  //     whose acquire began before the call ended and whose lease had not certainly ended when the
  //     call began (superseded, released, or expired by the latest expiry anything that may have
  //     landed could have set), or by a token a lost acquire may have taken (the windows above).
  // Known tokens by the earliest moment each may have been taken, with the running maximum token, to
  // find the last possible holder.
  const byTaken = known.map((t) => ({ t, from: takenFrom(t) })).sort((x, y) => x.from - y.from)
  const laterByRefusal: { floor: bigint; refusal: Op; ops: Op[] }[] = []
  const prefixMax: bigint[] = []
  for (const { t } of byTaken) {
    const m = prefixMax[prefixMax.length - 1]
    prefixMax.push(m !== undefined && m > t ? m : t)
  }
  for (const a of ops) {
    if (a.op !== 'acquire' || a.outcome !== 'fail' || a.code !== 'LEASE_HELD') continue
    const hiddenMay = mayBeHidden(a.invoke, a.complete)
    const lo = partitionPoint(byTaken.length, (index) => byTaken[index]!.from < a.complete)
    const last = lo > 0 ? prefixMax[lo - 1] : undefined
    if (last === undefined) {
      if (!hiddenMay) add('held-when-free', 'LEASE_HELD for a workId nobody had acquired', [a])
      continue
    }
    // The tokens that may have held it: the last one, and the ones before it that were not certainly
    // superseded before the call began. A missing token is a hidden one, whose window (above) did not
    // reach this call.
    let why: { message: string; ops: Op[] } | undefined
    for (let k = firstAtLeast(known, last + 1n) - 1; k >= 0; k--) {
      const u = known[k]!
      if (!(takenFrom(u) < a.complete)) continue
      const superseded = laterProof.get(u)
      if (u < last && superseded && superseded.complete < a.invoke) break
      const same = opsByToken.get(u)!
      const proven = releasedBy.get(u)
      const release =
        same.find((e) => e.op === 'release' && e.outcome === 'ok' && e.complete < a.invoke) ??
        (proven && proven.complete < a.invoke ? proven : undefined)
      if (release) {
        const how =
          release.op === 'release' ? '' : ` (its release, reply lost, had landed, as the ${release.op} shows)`
        why ??= { message: `token ${u} had been released${how}`, ops: [evidence.get(u)!, release] }
        continue
      }
      // Only a lost acquire took it: it landed before the token's first proof returned, so it set at
      // most that return (+ its offset) + its ttl, the latest expiry (as for renewed-after-expiry; its
      // start would be a lower bound, the wrong direction here). None of its holder's: unbounded.
      const acquired = byToken.has(u) ? undefined : lostAcquireLatest(u)
      if (acquired !== undefined && !Number.isFinite(acquired)) {
        why = undefined
        break
      }
      const latest = Math.min(
        latestExpiry(same, a.complete, undefined, acquired),
        latestAfterRefusal(same, a),
      )
      if (latest + tolerance <= nowLo(a)) {
        why ??= {
          message:
            `token ${u}'s lease had certainly expired ${(nowLo(a) - latest).toFixed(1)} ms before` +
            (acquired === undefined ? '' : ` (token ${u}'s acquire lost its reply)`),
          ops: [
            ...new Set([
              ...(acquired === undefined ? [] : [...lostTakersOf(u), evidence.get(u)!]),
              ...same.filter((e) => mayExtend(e) && e.invoke < a.complete),
            ]),
          ],
        }
        continue
      }
      why = undefined
      break
    }
    if (!why) continue
    if (!hiddenMay) {
      add('held-when-free', `LEASE_HELD though ${why.message}`, [...why.ops, a])
      continue
    }
    // Only a hidden lease explains the refusal: a lost acquire had landed by its end, with a token
    // above the floor of every window it may sit in (check 10b).
    let floor: bigint | undefined
    for (const w of hidden) {
      if (w.from < a.complete && w.to > a.invoke && (floor === undefined || w.above < floor)) floor = w.above
    }
    // One that names its token says more: it is pushed below.
    if (floor !== undefined && floor > 0n && !a.heldBy)
      laterByRefusal.push({ floor, refusal: a, ops: why.ops })
  }
  for (const r of ops) {
    if (r.op === 'acquire' && r.outcome === 'fail' && r.heldBy && r.heldBy.token > 1n)
      laterByRefusal.push({ floor: r.heldBy.token - 1n, refusal: r, ops: [] })
  }

  // 10b. A LEASE_HELD that names a token (or that only a hidden lease explains) proves a later token
  //      than the ones below it existed by its end: their records are never valid after it.
  for (const { floor, refusal, ops: why } of laterByRefusal) {
    for (const t of tokens) {
      if (t > floor) break
      for (const x of opsByToken.get(t)!) {
        if (!provesValid(x) || !(x.invoke > refusal.complete)) continue
        const how = refusal.heldBy
          ? `named token ${refusal.heldBy.token}`
          : 'only a later token, taken by an acquire whose reply was lost, can explain'
        add('valid-after-end', `${x.op} with token ${t} succeeded after a LEASE_HELD that ${how}`, [
          ...why,
          refusal,
          x,
        ])
      }
    }
  }

  // 11. The lease a LEASE_HELD names (drivers that report the holder) can have been the one in the
  //     way: no other holder is known to have had its token, an acquire of its holder's may have taken
  //     it (acknowledged with that token, or lost, begun before the refusal returned), and no acquire
  //     of a larger token had been acknowledged before the refusal began.
  const acknowledgedByEnd = [...acquiresOk].sort((x, y) => x.complete - y.complete)
  const largestAcknowledged: Op[] = []
  for (const a of acknowledgedByEnd) {
    const top = largestAcknowledged.at(-1)
    largestAcknowledged.push(top && top.token! > a.token! ? top : a)
  }
  // Per index into `known`, the earliest-completing evidence of that token or a larger one.
  const earliestLaterEvidence: (Op | undefined)[] = new Array(known.length + 1).fill(undefined)
  for (let k = known.length - 1; k >= 0; k--) {
    const e = evidence.get(known[k]!)!
    const after = earliestLaterEvidence[k + 1]
    earliestLaterEvidence[k] = after && after.complete < e.complete ? after : e
  }
  // When each holder first began an acquire whose reply was lost.
  const firstLostAcquire = new Map<string, number>()
  for (const [holder, list] of lostByHolder) {
    firstLostAcquire.set(
      holder,
      list.reduce((first, a) => Math.min(first, a.invoke), Number.POSITIVE_INFINITY),
    )
  }
  const largestKnown = known.at(-1) ?? 0n
  // Per holder, the tokens only a record op proves: each took one of that holder's lost acquires.
  const provenOnlyBy = new Map<string, number>()
  for (const [t, p] of proof) {
    if (!byToken.has(t)) provenOnlyBy.set(p.holder, (provenOnlyBy.get(p.holder) ?? 0) + 1)
  }
  for (const r of ops) {
    if (r.op !== 'acquire' || r.outcome !== 'fail' || !r.heldBy) continue
    const { token: named, holder } = r.heldBy
    const lease = `token ${named} of ${holder}`
    const owner = byToken.get(named) ?? proof.get(named)
    if (owner && owner.holder !== holder) {
      add('named-wrong-lease', `LEASE_HELD named ${lease}, but token ${named} was ${owner.holder}'s`, [
        owner,
        r,
      ])
      continue
    }
    // Looked up, not searched: a long run's workId has refusals and acquires by the hundred thousand.
    const acknowledged = byToken.get(named)
    const mayHaveTaken =
      (firstLostAcquire.get(holder) ?? Number.POSITIVE_INFINITY) < r.complete ||
      (acknowledged?.holder === holder && acknowledged.invoke < r.complete)
    if (!mayHaveTaken) {
      add(
        'named-wrong-lease',
        `LEASE_HELD named ${lease}, but no acquire of ${holder}'s begun before the refusal returned can have taken it`,
        [r],
      )
      continue
    }
    // Tokens are handed out one by one: above the largest known token, only the lost acquires no
    // missing token needs (check 3) can have taken any, one each, begun before the refusal returned,
    // once the largest known token's lease was free; and the named one by its holder's.
    if (!evidence.has(named) && named > largestKnown) {
      const above = named - largestKnown
      const holderSpare = (lostByHolder.get(holder)?.length ?? 0) - (provenOnlyBy.get(holder) ?? 0)
      const why =
        above > spare
          ? `past token ${largestKnown}, the ${spare} lost acquire(s) no missing token needs can have taken ${spare} more at most`
          : above > BigInt(lostBefore(r.complete))
            ? `past token ${largestKnown}, ${above} more need as many lost acquires begun before the refusal returned, and ${lostBefore(r.complete)} were`
            : holderSpare < 1
              ? `every lost acquire of ${holder}'s took a token a record op proves`
              : freeFrom(largestKnown) >= r.complete
                ? `token ${largestKnown}'s lease cannot have been free before the refusal returned`
                : undefined
      if (why) {
        add('named-wrong-lease', `LEASE_HELD named ${lease}, but no acquire can have taken it: ${why}`, [
          ...(byToken.has(largestKnown) ? [byToken.get(largestKnown)!] : []),
          r,
        ])
        continue
      }
    }
    const before = partitionPoint(
      acknowledgedByEnd.length,
      (index) => acknowledgedByEnd[index]!.complete < r.invoke,
    )
    const newer = before > 0 ? largestAcknowledged[before - 1]! : undefined
    if (newer && newer.token! > named) {
      add(
        'named-wrong-lease',
        `LEASE_HELD named ${lease}, but token ${newer.token} had been acquired before the call began`,
        [newer, r],
      )
      continue
    }
    // A larger token only a record op proves existed as surely: its acquire's reply was lost.
    const later = earliestLaterEvidence[firstAtLeast(known, named + 1n)]
    if (later && later.complete < r.invoke) {
      add(
        'named-wrong-lease',
        `LEASE_HELD named ${lease}, but token ${later.token} existed before the call began (${describeSuccessor(later)})`,
        [later, r],
      )
      continue
    }
    // The read that names the holder follows the refused write, and may find the lease ended since
    // (then expiring in 0 ms); but one that had ended before the call began refused nothing: the row
    // then held a later lease, or none.
    const same = opsByToken.get(named) ?? []
    const released = same.find((e) => e.op === 'release' && e.outcome === 'ok' && e.complete < r.invoke)
    if (released) {
      add('named-wrong-lease', `LEASE_HELD named ${lease}, released before the call began`, [released, r])
      continue
    }
    const proven = evidence.get(named)
    if (!proven) continue
    const acquired = byToken.has(named) ? undefined : lostAcquireLatest(named)
    if (acquired !== undefined && !Number.isFinite(acquired)) continue
    const latest = Math.min(latestExpiry(same, r.complete, undefined, acquired), latestAfterRefusal(same, r))
    if (!Number.isFinite(latest)) continue
    // Only a lease that existed before the call began: one taken during it (after the refused write,
    // before the driver read the holder) is what that read finds, whatever its expiry says on the
    // refuser's clock (a holder whose clock runs behind sets one in the refuser's past).
    if (proven.complete < r.invoke && latest + tolerance <= nowLo(r)) {
      add(
        'named-wrong-lease',
        `LEASE_HELD named ${lease}, whose lease had certainly expired ${(nowLo(r) - latest).toFixed(1)} ms before the call began`,
        [proven, r],
      )
      continue
    }
    // expiresInMs is on the store's clock, read after the refused write: no more than what the lease
    // can have had left then. A waiter sleeps that long.
    // Drivers report a lease already expired by then as expiring in 0 ms.
    const left = Math.max(0, latest - nowLo(r))
    if (r.heldBy.expiresInMs > left + tolerance) {
      add(
        'named-wrong-lease',
        `LEASE_HELD named ${lease} expiring in ${r.heldBy.expiresInMs} ms, but it had ${left.toFixed(1)} ms left at most`,
        [proven, r],
      )
    }
  }

  return out
}

/** The ops of the violation's workId around it, oldest first, the involved ones marked. */
export function historySlice(all: readonly Op[], violation: Violation, max = 30): string {
  const involved = new Set(violation.ops.map((op) => op.id))
  const lo = Math.min(...violation.ops.map((op) => op.invoke)) - 20
  const hi =
    Math.max(...violation.ops.map((op) => (Number.isFinite(op.complete) ? op.complete : op.invoke))) + 20
  const near = all.filter(
    (op) => op.workId === violation.workId && (involved.has(op.id) || (op.invoke <= hi && op.complete >= lo)),
  )
  // Keep the involved ops and the closest others.
  const others = near.filter((op) => !involved.has(op.id))
  const keep = new Set([
    ...violation.ops.map((op) => op.id),
    ...others.slice(0, Math.max(0, max - involved.size)).map((op) => op.id),
  ])
  const base = Math.min(...near.map((op) => op.invoke))
  return near
    .filter((op) => keep.has(op.id))
    .sort((x, y) => x.invoke - y.invoke)
    .map((op) => `${involved.has(op.id) ? '>>' : '  '} ${formatOp(op, base)}`)
    .join('\n')
}

export function formatOp(op: Op, base = 0): string {
  const end = Number.isFinite(op.complete) ? (op.complete - base).toFixed(1) : '?'
  const parts = [
    `[${(op.invoke - base).toFixed(1)} .. ${end}]`,
    op.id,
    op.holder,
    op.op,
    op.token !== null ? `token=${op.token}` : '',
    op.ttl !== null ? `ttl=${op.ttl}` : '',
    op.value !== null ? `value=${op.value}` : '',
    '->',
    op.outcome,
    op.code ?? '',
    op.heldBy
      ? `(by token=${op.heldBy.token} of ${op.heldBy.holder}, ${op.heldBy.expiresInMs.toFixed(0)} ms left)`
      : '',
    isRead(op) ? `state=${JSON.stringify(op.read)} clean=${op.clean}` : '',
    op.offsetAtInvoke || op.offsetAtComplete ? `clockOffset=${op.offsetAtInvoke}/${op.offsetAtComplete}` : '',
  ]
  return parts.filter(Boolean).join(' ')
}
