import type { MemberMessage } from './protocol.js'

/** One member's run of one unit: from its handler's start to its end (or the member's death). */
interface Holding {
  readonly member: string
  readonly unit: string
  readonly token: bigint
  readonly cleanHandoff: boolean
  readonly startedAt: number
  end?: { at: number; how: 'consent' | 'lost' | 'killed' }
}

/** What the ledger found about every handoff and every pair of runs of one unit. */
export interface LedgerAudit {
  /**
   * Runs of one unit by two members whose times overlap after a give-up by consent: the successor's
   * handler started before the giver's ended, which the pool rules out (it releases only after the
   * handler returned). After an expiry see `lateLossEnds`; the store's own one-holder rule is `tokenErrors`.
   */
  readonly overlaps: number
  readonly overlapExamples: readonly string[]
  /** Takes of one unit by two members with the same token. */
  readonly tokenErrors: number
  /** Takes after a give-up by consent, and how many of them read `cleanHandoff: true`. */
  readonly consentHandoffs: number
  readonly consentClean: number
  /** Takes after the holder was killed, and how many read `cleanHandoff: false`. */
  readonly crashHandoffs: number
  readonly crashUnclean: number
  /** Takes after the holder lost the lease while alive (renewal failed). */
  readonly lostHandoffs: number
  /** Successors that started before the previous holder's run ended, after a loss or a kill (a starved process noticed late). */
  readonly lateLossEnds: number
}

/**
 * The parent's book of a pool run, kept from the members' reports: who holds which unit now (for
 * convergence), every take (for moves), and every run's start and end (for overlaps and handoffs).
 * A killed member's runs end at the moment it was killed; it sends nothing after.
 */
export class PoolLedger {
  readonly #holder = new Map<string, string>()
  readonly #counts = new Map<string, number>()
  readonly #live = new Set<string>()
  readonly #runs = new Map<string, Holding[]>()
  readonly #open = new Map<string, Holding>()
  #takes = 0
  losses = 0

  constructor(readonly units: number) {}

  /** Takes so far (every acquire a handler reported). */
  get takes(): number {
    return this.#takes
  }

  get liveMembers(): readonly string[] {
    return [...this.#live]
  }

  join(member: string): void {
    this.#live.add(member)
    this.#counts.set(member, 0)
  }

  /** The member was SIGKILLed at `at`: its runs end there, its units are no longer held by anyone live. */
  kill(member: string, at: number): string[] {
    this.#live.delete(member)
    this.#counts.delete(member)
    const orphaned: string[] = []
    for (const [unit, holder] of this.#holder) {
      if (holder !== member) continue
      this.#holder.delete(unit)
      orphaned.push(unit)
      if (this.#open.get(unit)?.member === member) this.#open.delete(unit)
    }
    // Every run it had not reported ended, including ones whose unit a later take already shows elsewhere.
    for (const runs of this.#runs.values()) {
      for (const run of runs) if (run.member === member && !run.end) run.end = { at, how: 'killed' }
    }
    return orphaned
  }

  record(member: string, message: MemberMessage): void {
    switch (message.type) {
      case 'taken': {
        const runs = this.#runs.get(message.unit) ?? []
        // A handler that threw runs again on the same lease: the same take.
        if (runs.some((run) => run.token === message.token && run.member === member)) return
        const run: Holding = {
          member,
          unit: message.unit,
          token: message.token,
          cleanHandoff: message.cleanHandoff,
          startedAt: message.startedAt,
        }
        runs.push(run)
        this.#runs.set(message.unit, runs)
        this.#open.set(message.unit, run)
        this.#takes++
        const before = this.#holder.get(message.unit)
        if (before !== undefined) this.#counts.set(before, (this.#counts.get(before) ?? 1) - 1)
        this.#holder.set(message.unit, member)
        this.#counts.set(member, (this.#counts.get(member) ?? 0) + 1)
        break
      }
      case 'ended': {
        const run = this.#runs
          .get(message.unit)
          ?.find((r) => r.token === message.token && r.member === member)
        if (run && !run.end) run.end = { at: message.at, how: message.consent ? 'consent' : 'lost' }
        if (!message.consent) this.#drop(member, message.unit)
        break
      }
      case 'released':
        this.#drop(member, message.unit)
        break
      case 'lost':
        this.losses++
        this.#drop(member, message.unit)
        break
    }
  }

  #drop(member: string, unit: string): void {
    if (this.#holder.get(unit) !== member) return
    this.#holder.delete(unit)
    this.#counts.set(member, (this.#counts.get(member) ?? 1) - 1)
    if (this.#open.get(unit)?.member === member) this.#open.delete(unit)
  }

  /** Units held by each live member now. */
  counts(): Map<string, number> {
    return new Map([...this.#live].map((member) => [member, this.#counts.get(member) ?? 0]))
  }

  /** The live holder of every unit held now, as the members reported. */
  holders(): Map<string, string> {
    return new Map([...this.#holder].filter(([, holder]) => this.#live.has(holder)))
  }

  /** Units held by live members now. */
  held(): number {
    let held = 0
    for (const holder of this.#holder.values()) if (this.#live.has(holder)) held++
    return held
  }

  /** The issue 18 criterion: every unit held, every live member at most ceil(N/W) + 1. */
  converged(): boolean {
    const live = this.#live.size
    if (live === 0 || this.held() !== this.units) return false
    const bound = Math.ceil(this.units / live) + 1
    for (const count of this.counts().values()) if (count > bound) return false
    return true
  }

  /**
   * The fewest takes that can bring the group from now into the floor..ceil band: every unit no live
   * member holds must be taken once, and every unit above ceil(N/W) must move once.
   */
  minimumMoves(): number {
    const ceil = Math.ceil(this.units / this.#live.size)
    let surplus = 0
    for (const count of this.counts().values()) surplus += Math.max(0, count - ceil)
    return this.units - this.held() + surplus
  }

  audit(): LedgerAudit {
    let overlaps = 0
    const overlapExamples: string[] = []
    let tokenErrors = 0
    let consentHandoffs = 0
    let consentClean = 0
    let crashHandoffs = 0
    let crashUnclean = 0
    let lostHandoffs = 0
    let lateLossEnds = 0
    for (const [unit, runs] of this.#runs) {
      const ordered = [...runs].sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0))
      for (let i = 1; i < ordered.length; i++) {
        const before = ordered[i - 1]!
        const after = ordered[i]!
        // Two members with one token: the store let two acquires win. (Report order says nothing:
        // reports from different processes cross on the way.)
        if (before.token === after.token && before.member !== after.member) tokenErrors++
        // The successor's handler must start after the predecessor's run ended. After a loss (the
        // member renewed too late) the store let the successor in only at expiry, but a starved member
        // may notice later still: its run then overlaps in time with no second holder in the store,
        // which is what fencing tokens are for. Counted apart.
        // A killed member's run that a successor started before the kill had lost its lease already
        // (the store let the successor in): the same case.
        const endedAt = before.end?.at ?? Number.POSITIVE_INFINITY
        if (before.end?.how !== 'consent' && after.startedAt < endedAt) lateLossEnds++
        else if (after.startedAt < endedAt) {
          overlaps++
          if (overlapExamples.length < 3)
            overlapExamples.push(
              `${unit}: ${before.member} token ${before.token} (${before.end ? `ended ${before.end.how}` : 'never ended'}) and ${after.member} token ${after.token}`,
            )
        }
        switch (before.end?.how) {
          case 'consent':
            consentHandoffs++
            if (after.cleanHandoff) consentClean++
            break
          case 'killed':
            crashHandoffs++
            if (!after.cleanHandoff) crashUnclean++
            break
          case 'lost':
            lostHandoffs++
            break
        }
      }
    }
    return {
      overlaps,
      overlapExamples,
      tokenErrors,
      consentHandoffs,
      consentClean,
      crashHandoffs,
      crashUnclean,
      lostHandoffs,
      lateLossEnds,
    }
  }
}
