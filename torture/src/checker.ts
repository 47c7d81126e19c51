import type { Op } from './history.js'

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
  // The runner workload's (runner-checks.ts):
  | 'held-after-takeover'

export interface Violation {
  readonly check: CheckName
  readonly workId: string
  readonly message: string
  /** The ops that together prove the violation. */
  readonly ops: readonly Op[]
}

export interface CheckOptions {
  /**
   * Slack, in ms, for the one time-based check (early-takeover): the store's "now" and the host's
   * monotonic clock are different clocks (ms rounding, timer resolution). Default 25.
   */
  toleranceMs?: number
}

/** A record op that, when it returned, proved its record valid at some instant inside its interval. */
const provesValid = (op: Op): boolean =>
  op.op !== 'acquire' && (op.outcome === 'ok' || (op.outcome === 'fail' && op.code === 'LEASE_EXPIRED'))

const isAcquireOk = (op: Op): boolean => op.op === 'acquire' && op.outcome === 'ok'
const isAcquireInfo = (op: Op): boolean => op.op === 'acquire' && op.outcome === 'info'
const mayHaveHappened = (op: Op): boolean => op.outcome === 'ok' || op.outcome === 'info'

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
  const tolerance = options.toleranceMs ?? 25
  const out: Violation[] = []
  const add = (check: CheckName, message: string, involved: Op[]) =>
    out.push({ check, workId, message, ops: involved })

  const acquiresOk = ops.filter(isAcquireOk)
  const acquiresInfo = ops.filter(isAcquireInfo)

  // 1. Every ok acquire got its own token.
  const byToken = new Map<bigint, Op>()
  for (const a of acquiresOk) {
    const other = byToken.get(a.token!)
    if (other) add('duplicate-token', `two acquires both got token ${a.token}`, [other, a])
    else byToken.set(a.token!, a)
  }

  // 2. Tokens increase in real-time order: an acquire that began after another ended has a larger token.
  const byComplete = [...acquiresOk].sort((x, y) => x.complete - y.complete)
  const byInvoke = [...acquiresOk].sort((x, y) => x.invoke - y.invoke)
  let best: Op | undefined
  let i = 0
  for (const b of byInvoke) {
    while (i < byComplete.length && byComplete[i]!.complete < b.invoke) {
      const a = byComplete[i++]!
      if (!best || a.token! > best.token!) best = a
    }
    if (best && best.token! >= b.token!) {
      add('token-order', `token ${b.token} acquired after token ${best.token} had been acquired`, [best, b])
    }
  }

  // 3. Tokens are consecutive; a missing one must have gone to an acquire whose reply was lost.
  if (acquiresOk.length > 0) {
    // Not Math.max: tokens are bigints.
    let max = 0n
    for (const a of acquiresOk) if (a.token! > max) max = a.token!
    const missing: bigint[] = []
    for (let t = 1n; t <= max && missing.length <= acquiresInfo.length; t++)
      if (!byToken.has(t)) missing.push(t)
    if (missing.length > acquiresInfo.length) {
      add(
        'token-gap',
        `tokens ${missing.slice(0, 5).join(', ')}... were never handed out, more than the ${acquiresInfo.length} indeterminate acquires can explain`,
        byInvoke.slice(0, 5),
      )
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
  const tokens = [...opsByToken.keys()].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
  // For each token t: the earliest-completing op that proves a later token exists (an ok acquire of a
  // later token, or a record op that proved a later record valid), and the earliest invocation of an
  // ok acquire of a later token. Suffix minima over tokens, largest first.
  const laterProof = new Map<bigint, Op | undefined>()
  const laterAcquireInvoke = new Map<bigint, number>()
  let proof: Op | undefined
  let acquireInvoke = Number.POSITIVE_INFINITY
  for (let k = tokens.length - 1; k >= 0; k--) {
    const t = tokens[k]!
    laterProof.set(t, proof)
    laterAcquireInvoke.set(t, acquireInvoke)
    for (const op of opsByToken.get(t)!) {
      if ((isAcquireOk(op) || provesValid(op)) && (!proof || op.complete < proof.complete)) proof = op
      if (isAcquireOk(op)) acquireInvoke = Math.min(acquireInvoke, op.invoke)
    }
  }
  const firstInfoAcquire = acquiresInfo.reduce((m, a) => Math.min(m, a.invoke), Number.POSITIVE_INFINITY)

  for (const t of tokens) {
    const same = opsByToken.get(t)!
    // When the lease of token t certainly ended: superseded, or released by an acknowledged release.
    let end = laterProof.get(t)
    for (const r of same) {
      if (r.op === 'release' && r.outcome === 'ok' && (!end || r.complete < end.complete)) end = r
    }
    // The earliest moment something may have ended it: an acquire of a later token (or one whose reply
    // was lost) or a release of t that may have landed.
    let mayEnd = Math.min(laterAcquireInvoke.get(t)!, firstInfoAcquire)
    for (const r of same) if (r.op === 'release' && mayHaveHappened(r)) mayEnd = Math.min(mayEnd, r.invoke)

    for (const x of same) {
      if (x.op === 'acquire') continue
      // 4. No record op succeeds after its lease certainly ended (taken over or released).
      if (provesValid(x) && end && end !== x && x.invoke > end.complete) {
        const what = end.op === 'release' && end.token === t ? 'released' : `superseded by token ${end.token}`
        add('valid-after-end', `${x.op} with token ${t} succeeded after the lease was ${what}`, [end, x])
      }
      // 5. FENCED only if something could have ended the lease before the reply.
      if (x.outcome === 'fail' && x.code === 'FENCED' && !(mayEnd < x.complete)) {
        add(
          'fenced-while-valid',
          `${x.op} with token ${t} was FENCED while nothing could have ended its lease`,
          [x],
        )
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

  // 7. Reads: the state is the last checkpoint that landed; a failed one is never visible.
  const checkpointByValue = new Map<string, Op>()
  for (const c of ops) if (c.op === 'checkpoint' && c.value !== null) checkpointByValue.set(c.value, c)
  const okByToken = new Map<bigint, Op[]>()
  for (const c of checkpointsOk) {
    const list = okByToken.get(c.token!) ?? []
    list.push(c)
    okByToken.set(c.token!, list)
  }
  const cleanByToken = new Map<bigint, Op>()
  for (const r of ops) {
    if (r.op !== 'readCheckpoint' || r.outcome !== 'ok') continue
    const t = r.token!
    let source: Op | undefined
    if (r.read !== null) {
      source = checkpointByValue.get(r.read)
      if (!source) {
        add('phantom-state', `read state ${JSON.stringify(r.read)} that no checkpoint wrote`, [r])
        continue
      }
      if (source.outcome === 'fail') {
        add('failed-checkpoint-visible', `read the state of a checkpoint that failed with ${source.code}`, [
          source,
          r,
        ])
        continue
      }
      if (source.token! > t || source.invoke > r.complete) {
        add('read-from-future', `token ${t} read a state written later (token ${source.token})`, [source, r])
        continue
      }
    }
    // A later acknowledged checkpoint that certainly landed between the source and this read.
    const from = source?.token ?? 0n
    for (let u = from; u <= t; u++) {
      for (const c2 of okByToken.get(u) ?? []) {
        if (c2 === source) continue
        const afterSource = !source || c2.token! > source.token! || source.complete < c2.invoke
        const beforeRead = c2.token! < t || c2.complete < r.invoke
        if (afterSource && beforeRead) {
          add(
            'stale-read',
            `token ${t} read ${JSON.stringify(r.read)} though an acknowledged later checkpoint wrote ${JSON.stringify(c2.value)}`,
            source ? [source, c2, r] : [c2, r],
          )
        }
      }
    }
    // 8. cleanHandoff is whether the previous lease ended by release.
    if (r.clean !== null) {
      const previous = (opsByToken.get(t - 1n) ?? []).filter((e) => e.op === 'release')
      if (t === 1n && !r.clean)
        add('clean-handoff', 'token 1 (no previous lease) read cleanHandoff false', [r])
      if (t > 1n && r.clean && !previous.some(mayHaveHappened)) {
        add('clean-handoff', `cleanHandoff true but token ${t - 1n} was never released`, [...previous, r])
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

  // 9. No takeover before the previous lease expired by the store's clock. The expiry the acquire A of
  //    token t saw was set by the last extender L of token t-1 (its acquire, a renew or a checkpoint):
  //    expiry = now_L + ttl_L >= L.invoke + ttl_L (+ L's clock offset), and A read "now" <= A.complete
  //    (+ A's offset). L is unknown, so take the smallest bound over every extender that may have landed
  //    and is not certainly followed by an acknowledged one. Skipped if t-1 may have been released.
  for (const a of acquiresOk) {
    const prev = a.token! - 1n
    if (prev < 1n) continue
    const previous = opsByToken.get(prev) ?? []
    if (!previous.some(isAcquireOk)) continue
    if (previous.some((e) => e.op === 'release' && mayHaveHappened(e) && e.invoke < a.complete)) continue
    const extenders = previous.filter(
      (e) =>
        (isAcquireOk(e) || ((e.op === 'renew' || e.op === 'checkpoint') && mayHaveHappened(e))) &&
        e.ttl !== null &&
        e.invoke < a.complete,
    )
    const acked = extenders.filter((e) => e.outcome === 'ok')
    let bound = Number.POSITIVE_INFINITY
    let last: Op | undefined
    for (const l of extenders) {
      if (acked.some((z) => z !== l && z.invoke > l.complete)) continue
      const at = l.invoke + l.ttl! + Math.min(l.offsetAtInvoke, l.offsetAtComplete)
      if (at < bound) {
        bound = at
        last = l
      }
    }
    const seen = a.complete + Math.max(a.offsetAtInvoke, a.offsetAtComplete)
    if (last && seen < bound - tolerance) {
      add(
        'early-takeover',
        `token ${a.token} was acquired ${(bound - seen).toFixed(1)} ms before token ${prev}'s lease could have expired`,
        [last, a],
      )
    }
  }

  // 10. LEASE_HELD only if the lease could have been held: it was certainly never taken, or certainly
  //     released by its last possible holder.
  // Ok acquires by invocation with the running maximum token, to find the last possible holder.
  const prefixMax: Op[] = []
  for (const a of byInvoke) {
    const m = prefixMax[prefixMax.length - 1]
    prefixMax.push(m && m.token! > a.token! ? m : a)
  }
  for (const a of ops) {
    if (a.op !== 'acquire' || a.outcome !== 'fail' || a.code !== 'LEASE_HELD') continue
    if (firstInfoAcquire < a.complete) continue
    let lo = 0
    let hi = byInvoke.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (byInvoke[mid]!.invoke < a.complete) lo = mid + 1
      else hi = mid
    }
    const last = lo > 0 ? prefixMax[lo - 1] : undefined
    if (!last) {
      add('held-when-free', 'LEASE_HELD for a workId nobody had acquired', [a])
      continue
    }
    const release = (opsByToken.get(last.token!) ?? []).find(
      (e) => e.op === 'release' && e.outcome === 'ok' && e.complete < a.invoke,
    )
    if (release)
      add('held-when-free', `LEASE_HELD though token ${last.token} had been released`, [last, release, a])
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
    op.op === 'readCheckpoint' && op.outcome === 'ok'
      ? `state=${JSON.stringify(op.read)} clean=${op.clean}`
      : '',
    op.offsetAtInvoke || op.offsetAtComplete ? `clockOffset=${op.offsetAtInvoke}/${op.offsetAtComplete}` : '',
  ]
  return parts.filter(Boolean).join(' ')
}
