import { type ChildProcess, spawn } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { openPoolStore } from './open-pool-store.js'
import { phaseGoals } from './phase-goals.js'
import { type LedgerAudit, PoolLedger } from './pool-ledger.js'
import type { PoolStoreName } from './pool-stores.js'
import type { MemberConfig, MemberMessage, ParentMessage } from './protocol.js'
import { readGroupHolders } from './read-group-holders.js'

export interface PoolFleetSettings {
  readonly units: number
  readonly members: number
  readonly joining: number
  readonly killed: number
  readonly ttlMs: number
}

/** One change to the fleet and how the pool answered it. */
export interface PoolPhaseResult {
  readonly phase: 'start' | 'join' | 'crash'
  readonly description: string
  readonly liveMembers: number
  /** From the change to the first moment every unit was held and no member held more than ceil(N/W) + 1. */
  readonly convergedMs: number | null
  readonly convergedRenewIntervals: number | null
  /** The goal: 3 renew intervals (after a crash, plus the ttl). */
  readonly goalMs: number
  /** Takes from the change until the fleet was quiet (no take for two renew intervals). */
  readonly moves: number
  /** The fewest takes that could do it (see PoolLedger.minimumMoves). */
  readonly minimumMoves: number
  /** Units per live member once quiet, lowest and highest. */
  readonly finalMin: number
  readonly finalMax: number
  /** Leases the store showed held, by live members, once quiet; and how many disagreed with the reports. */
  readonly storeHeld: number
  readonly storeMismatches: number
  /** Unit leases the members lost during the phase (renewed too late), and the longest any member's event loop stalled. */
  readonly losses: number
  readonly maxEventLoopDelayMs: number
}

export interface PoolFleetResult extends PoolFleetSettings {
  readonly store: PoolStoreName
  readonly server: string
  readonly renewIntervalMs: number
  readonly phases: readonly PoolPhaseResult[]
  readonly audit: LedgerAudit
  readonly losses: number
  /** Leases the members' Leasers lost, by kind (unit, membership) and reason. */
  readonly lossReasons: Readonly<Record<string, number>>
  readonly rebalanceFailures: number
  readonly memberFailures: readonly string[]
  readonly seconds: number
}

const now = () => performance.timeOrigin + performance.now()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const CHILD = fileURLToPath(new URL('./member-child.ts', import.meta.url))

interface Member {
  readonly holderId: string
  readonly child: ChildProcess
  readonly ready: Promise<void>
  readonly exited: Promise<void>
}

/**
 * Issue 18's fleet with real processes: `members` OS processes, each a LeasePool member with its own
 * Leaser over one store, share `units` units; then `joining` more join; then `killed` of them are
 * SIGKILLed. After each change: time to convergence (in renew intervals), takes against the fewest
 * possible, and at the end, from every member's reports, overlapping runs of one unit and whether
 * each handoff read the `cleanHandoff` it should.
 *
 * ```ts
 * const result = await measurePoolFleet('sqlite', { units: 1_000, members: 10, joining: 5, killed: 7, ttlMs: 6_000 }, console.error)
 * ```
 */
export async function measurePoolFleet(
  storeName: PoolStoreName,
  settings: PoolFleetSettings,
  log: (line: string) => void,
): Promise<PoolFleetResult> {
  const started = now()
  const store = await openPoolStore(storeName)
  log(`  ${store.server}`)
  const renewIntervalMs = Math.floor(settings.ttlMs / 3) // the Leaser's default
  const group = `bench-pool-${Math.random().toString(36).slice(2, 8)}`
  const ledger = new PoolLedger(settings.units)
  const members = new Map<string, Member>()
  const failures: string[] = []
  let rebalanceFailures = 0
  const lossReasons = new Map<string, number>()
  let phaseLagMs = 0
  let onChange: ((at: number) => void) | undefined
  let lastTakeAt = 0

  const fork = (holderId: string): Member => {
    const config: MemberConfig = {
      holderId,
      store: store.spec,
      group,
      units: settings.units,
      ttlMs: settings.ttlMs,
    }
    const child = spawn(
      process.execPath,
      ['--import', import.meta.resolve('tsx'), CHILD, JSON.stringify(config)],
      {
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        serialization: 'advanced',
      },
    )
    let stderr = ''
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-2_000)
    })
    let resolveReady!: () => void
    const ready = new Promise<void>((resolve) => {
      resolveReady = resolve
    })
    child.on('message', (message: MemberMessage) => {
      switch (message.type) {
        case 'ready':
          resolveReady()
          return
        case 'rebalanceFailed':
          rebalanceFailures++
          if (rebalanceFailures <= 3) log(`  ${holderId} rebalance failed: ${message.message.split('\n')[0]}`)
          return
        case 'trace':
          if (
            holderId === 'm00' ||
            process.env.WORKLEASE_POOL_TRACE === 'all' ||
            message.text.startsWith('renewFailed')
          )
            log(`    ${holderId} ${Math.round(now() - started)} ms ${message.text}`)
          return
        case 'lag':
          phaseLagMs = Math.max(phaseLagMs, message.maxMs)
          return
        case 'leaseLost': {
          const kind = message.workId.startsWith(`${group}/m/`) ? 'membership' : 'unit'
          const key = `${kind} ${message.reason}`
          lossReasons.set(key, (lossReasons.get(key) ?? 0) + 1)
          if (process.env.WORKLEASE_POOL_TRACE)
            log(`    ${holderId} ${Math.round(now() - started)} ms lost ${message.workId} ${message.reason}`)
          return
        }
        case 'failed':
          failures.push(`${holderId}: ${message.message}`)
          return
        case 'taken':
          lastTakeAt = message.at
          break
      }
      ledger.record(holderId, message)
      onChange?.('at' in message ? message.at : now())
    })
    child.on('error', () => undefined)
    const exited = new Promise<void>((resolve) =>
      child.once('exit', (code, signal) => {
        if (code !== 0 && signal !== 'SIGKILL')
          failures.push(`${holderId} exited with ${code ?? signal}: ${stderr}`)
        resolveReady()
        resolve()
      }),
    )
    const member = { holderId, child, ready, exited }
    members.set(holderId, member)
    return member
  }
  const send = (member: Member, message: ParentMessage) => {
    if (member.child.connected) member.child.send(message)
  }
  const name = (index: number) => `m${String(index).padStart(2, '0')}`

  /** Waits for convergence, then until no member took anything for two renew intervals. */
  const observe = async (
    phase: PoolPhaseResult['phase'],
    description: string,
    changedAt: number,
    minimumMoves: number,
    takesBefore: number,
  ): Promise<PoolPhaseResult> => {
    const goalMs = 3 * renewIntervalMs + (phase === 'crash' ? settings.ttlMs : 0)
    phaseLagMs = 0
    const lossesBefore = ledger.losses
    // Twice the goal and then some: enough to see a slow convergence, bounded so --quick stays short.
    const limit = changedAt + goalMs + 6 * renewIntervalMs
    let convergedAt: number | undefined
    // The moment is the member's own timestamp of the report that completed it, not its arrival here.
    const check = (at: number) => {
      if (convergedAt === undefined && ledger.converged()) convergedAt = at
    }
    onChange = check
    check(now())
    while (now() < limit) {
      await sleep(50)
      if (convergedAt !== undefined && now() - Math.max(lastTakeAt, convergedAt) > 2 * renewIntervalMs) break
    }
    onChange = undefined
    const counts = [...ledger.counts().values()]
    const listed = await readGroupHolders(store.backend, group)
    const live = new Set(ledger.liveMembers)
    let storeHeld = 0
    let storeMismatches = 0
    const reported = ledger.holders()
    for (const [unit, holder] of listed) {
      if (live.has(holder)) storeHeld++
      if (reported.get(unit) !== holder && live.has(holder)) storeMismatches++
    }
    for (const [unit, holder] of reported) if (listed.get(unit) !== holder) storeMismatches++
    const convergedMs = convergedAt === undefined ? null : Math.round(convergedAt - changedAt)
    const result: PoolPhaseResult = {
      phase,
      description,
      liveMembers: live.size,
      convergedMs,
      convergedRenewIntervals:
        convergedMs === null ? null : Math.round((convergedMs / renewIntervalMs) * 100) / 100,
      goalMs,
      moves: ledger.takes - takesBefore,
      minimumMoves,
      finalMin: Math.min(...counts),
      finalMax: Math.max(...counts),
      storeHeld,
      storeMismatches,
      losses: ledger.losses - lossesBefore,
      maxEventLoopDelayMs: Math.round(phaseLagMs),
    }
    const goals = phaseGoals(result)
    const mark = (pass: boolean | undefined) =>
      pass === undefined ? 'n/a (did not converge)' : pass ? 'PASS' : 'FAIL'
    log(
      `  ${phase}: ${description}: converged ${convergedMs === null ? 'never' : `in ${convergedMs} ms (${result.convergedRenewIntervals} renew intervals)`}, goal ${goalMs} ms ${mark(goals.converged)}; ` +
        `${result.moves} moves, minimum ${minimumMoves} (${(result.moves / Math.max(1, minimumMoves)).toFixed(2)}x, goal 1.2x) ${mark(goals.moves)}; ` +
        `units per member ${result.finalMin}..${result.finalMax}; store shows ${storeHeld} held, ${storeMismatches} mismatches; ` +
        `${result.losses} units lost, longest event-loop stall ${result.maxEventLoopDelayMs} ms`,
    )
    return result
  }

  const phases: PoolPhaseResult[] = []
  try {
    // Start: W members boot, then all start at once.
    const first = Array.from({ length: settings.members }, (_, i) => fork(name(i)))
    await Promise.all(first.map((member) => member.ready))
    let changedAt = now()
    for (const member of first) {
      ledger.join(member.holderId)
      send(member, { type: 'start' })
    }
    phases.push(
      await observe(
        'start',
        `${settings.members} members start together`,
        changedAt,
        ledger.minimumMoves(),
        0,
      ),
    )

    const joining = Array.from({ length: settings.joining }, (_, i) => fork(name(settings.members + i)))
    await Promise.all(joining.map((member) => member.ready))
    changedAt = now()
    for (const member of joining) {
      ledger.join(member.holderId)
      send(member, { type: 'start' })
    }
    let takes = ledger.takes
    phases.push(
      await observe('join', `${settings.joining} members join`, changedAt, ledger.minimumMoves(), takes),
    )

    // The highest-numbered members die: some of the first, all of the joiners (as fair-share.test.ts).
    const total = settings.members + settings.joining
    const victims = Array.from(
      { length: settings.killed },
      (_, i) => members.get(name(total - settings.killed + i))!,
    )
    changedAt = now()
    for (const victim of victims) victim.child.kill('SIGKILL')
    for (const victim of victims) ledger.kill(victim.holderId, changedAt)
    takes = ledger.takes
    const orphanedMinimum = ledger.minimumMoves()
    phases.push(
      await observe('crash', `${settings.killed} of ${total} SIGKILLed`, changedAt, orphanedMinimum, takes),
    )
  } finally {
    // Survivors leave cleanly (their last handlers end by consent), then anything left is killed.
    const alive = [...members.values()].filter(
      (m) => m.child.exitCode === null && m.child.signalCode === null,
    )
    for (const member of alive) send(member, { type: 'close' })
    await Promise.race([Promise.all(alive.map((m) => m.exited)), sleep(settings.ttlMs + 5_000)])
    for (const member of alive) if (member.child.exitCode === null) member.child.kill('SIGKILL')
    await store.close().catch(() => undefined)
  }
  const audit = ledger.audit()
  const mark = (pass: boolean, count = 1) => (count === 0 ? 'n/a (none)' : pass ? 'PASS' : 'FAIL')
  log(
    `  overlaps ${audit.overlaps}, token errors ${audit.tokenErrors} ${mark(audit.overlaps + audit.tokenErrors === 0)}${audit.overlapExamples.length ? ` (${audit.overlapExamples.join('; ')})` : ''}; ` +
      `consent handoffs clean ${audit.consentClean}/${audit.consentHandoffs} ${mark(audit.consentClean === audit.consentHandoffs, audit.consentHandoffs)}; ` +
      `crash handoffs unclean ${audit.crashUnclean}/${audit.crashHandoffs} ${mark(audit.crashUnclean === audit.crashHandoffs, audit.crashHandoffs)}; ` +
      `${ledger.losses} losses (${[...lossReasons].map(([why, n]) => `${n} ${why}`).join(', ') || 'none'}), ${audit.lostHandoffs} handoffs after a loss (${audit.lateLossEnds} before the loser noticed), ${rebalanceFailures} rebalance failures` +
      (failures.length ? `; member failures: ${failures.map((f) => f.split('\n')[0]).join('; ')}` : ''),
  )
  return {
    ...settings,
    store: storeName,
    server: store.server,
    renewIntervalMs,
    phases,
    audit,
    losses: ledger.losses,
    lossReasons: Object.fromEntries(lossReasons),
    rebalanceFailures,
    memberFailures: failures,
    seconds: Math.round((now() - started) / 100) / 10,
  }
}
