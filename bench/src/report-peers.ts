import { isFerretdb1 } from './is-ferretdb1.js'
import type { PeerCycleCell, TakeoverResult } from './peers/measure.js'
import type { PeerStoreResult } from './peers/peers.js'
import type { BackendResult, BenchResults } from './results.js'
import { round, type Spread } from './stats.js'

const range = (value: Spread) => `${value.median} [${value.min}–${value.max}]`
const table = (header: readonly string[], rows: readonly (readonly string[])[]) =>
  [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n')

const latency = (t: TakeoverResult | undefined) => {
  if (!t) return ''
  if (t.notMeasured) return `n/a: ${t.notMeasured}`
  if (t.p50Ms === undefined)
    return `no round completed (${t.failures} failed${t.firstFailure ? `: ${t.firstFailure}` : ''})`
  const failed = t.failures
    ? `, ${t.failures} failed ⚠${t.firstFailure ? ` (first: ${t.firstFailure})` : ''}`
    : ''
  return `${t.p50Ms} / ${t.p99Ms} (max ${t.maxMs}, n ${t.rounds}${failed})`
}

/** worklease's own takeover latency per backend (issue 15 item 7), with the goal beside it. */
export function renderTakeover(results: BenchResults): string[] {
  const rows = results.backends.filter(
    (backend): backend is BackendResult & Required<Pick<BackendResult, 'takeover'>> =>
      Boolean(backend.takeover),
  )
  const redis = results.peers.find((store) => store.store === 'redis')?.sides?.[0]?.takeover
  if (rows.length === 0 && !redis) return []
  const ttl = results.settings.takeoverTtlMs
  const out = ['## Takeover (worklease runner)', '']
  out.push(
    `\`Leaser.acquire(workId, { wait: true })\` with default options (ttl ${ttl} ms, retry: full jitter from 50 ms doubling to 2 s) ` +
      'against a holder that crashed (took the lease through the driver, then never renewed nor released) and against ' +
      "one that released 200–600 ms after the waiter started. **Crash**: ms from the lease's expiry (taken as the " +
      "holder's acquire start + ttl: the store's expiry is at most one round trip later, so this counts up to one " +
      'round trip against every library alike) to the waiter holding it. **Release**: ms from `release()` returning to the waiter holding it. p50 / p99 over ' +
      `${results.settings.takeoverRounds} rounds per kind, ${results.settings.peers.takeoverParallel} at a time on ` +
      "their own workIds, one kind after the other; with this few rounds, p99 is the slowest round. Issue 15's goal: " +
      'crash p99 within 2 round trips + 50 ms past expiry; a ' +
      'release taken within 2 round trips + the poll interval. "LEASE_HELD carries expiry": the driver reports ' +
      '`holder.expiresInMs` when an acquire finds the lease held, so a runner that reads it can sleep until the expiry ' +
      'instead of backing off blindly; the numbers are whatever the runner in this build does with it.',
    '',
  )
  const body = rows.map((backend) => {
    const t = backend.takeover
    const met = t.crash.p99Ms !== undefined && t.crash.p99Ms <= t.crashGoalMs
    return [
      backend.name,
      String(t.roundTripMs),
      t.heldErrorCarriesExpiry ? 'yes' : 'no',
      latency(t.crash),
      `${t.crashGoalMs} ${t.crash.p99Ms === undefined ? '' : met ? '✓' : '✗'}`,
      latency(t.release),
    ]
  })
  if (redis) {
    body.push([
      'redis (example driver, from the peers section)',
      '',
      '',
      latency(redis.find((t) => t.kind === 'crash')),
      '',
      latency(redis.find((t) => t.kind === 'release')),
    ])
  }
  out.push(
    table(
      [
        'backend',
        'round trip ms (LEASE_HELD)',
        'LEASE_HELD carries expiry',
        'after a crash: p50 / p99 ms past expiry',
        'goal p99 ≤ ms',
        'after a release: p50 / p99 ms',
      ],
      body,
    ),
    '',
  )
  return out
}

/** The peers section: per store, the cycle ratios, round trips, race and takeover of every library. */
export function renderPeers(results: BenchResults): string[] {
  if (results.peers.length === 0) return []
  const s = results.settings.peers
  const out = ['## Peers', '']
  out.push(
    'worklease beside the lock library a user would otherwise pick, on the same server, each through its own public ' +
      'API and its own client. **Cycles**: acquire + release of a free lock (the closest pair each library offers; ' +
      `ttl ${s.ttlMs / 1000} s where it has one), each worker on its own keys, ${s.repetitions} repetitions of ` +
      `${s.durationMs} ms per side, sides interleaved in rotating order. **Ratio** = worklease cycles/s ÷ the peer's, ` +
      'paired per repetition: median [min–max]; above 1 worklease is faster. worklease is measured twice: the ' +
      '`Leaser` (what an application calls: it schedules renewal, tracks the lease, ends it locally first) and its ' +
      'driver alone, making the store calls the Leaser makes (`backend.acquireWithCheckpoint`, which the Leaser uses by ' +
      "default to hand the previous holder's checkpoint over in the acquire's round trip, then `backend.release` " +
      'with an AbortSignal, as the Leaser hands it one), so a gap shows whether it is the store work or the ' +
      "runner. **Round trips** per cycle, counted on each side's own client. **Race**: N single attempts on one free " +
      "key launched in the same tick; winners must be 1. **Takeover**: as in the section above, the library's own " +
      `waiting acquire, ttl ${s.takeoverTtlMs} ms. The peers' semantics differ from worklease's: read them before the ratios.`,
    '',
  )
  for (const store of results.peers) out.push(...renderStore(store))
  return out
}

// Why a peer can come out ahead, from profiling and reading its source when these sections were built
// (issue 19 asks the bench to say why wherever a peer wins). Printed under the store's tables.
const WHY: Partial<Record<PeerStoreResult['store'], string>> = {
  redis:
    "Each peer's acquire is one SET NX PX and its release a compare-and-delete. worklease's acquire script reads the hash (token, holder, expiry, released), reads Redis's clock, adds the workId to the list index, writes six fields and reads the checkpoint; its release reads four fields, reads the clock and writes two: what a fencing token, an expiry on the server's clock, a holder reported with LEASE_HELD and a listing cost. " +
    "Redis's own time in commands shows it (INFO commandstats, session 47, 20,000 cycles at concurrency 16, 3 interleaved runs): 12.8-20.4 µs a cycle for worklease's two scripts, 6.5-9.1 for redlock's, 4.4-5.3 for redlock-universal's and 4.3-5.2 for redis-semaphore's. Part of it is Lua calling into Redis, 0.45-1.05 µs a call beyond the command itself (a script calling TIME five times against one calling it not at all, 5 runs): worklease's scripts make 8 calls a cycle, the peers' 2 (redlock: 4). The checkpoint's read stays a call of its own: folded into the first read, it would copy the state (up to 16 MiB) into Lua for every refused acquire. Redis's whole CPU differs less between the libraries than its time in commands: in the same runs it was 24.5-40.5 µs a cycle (from /proc) with worklease and 24.5-34.5 with the peers, most of it outside commands (socket I/O, parsing, its event loop). " +
    'None of the peers tracks a lease locally or fences; per acquire + release the Leaser adds a Lease with its local deadline (both clocks read at the acquire, at its reply and at the release), a seat in the deadline wheel and one in the renewal schedule, an entry per backend call in a shared timeout queue, and the promises of an async acquire, two raced calls and a queued release. ' +
    'Counted on the client process in session 46 (callgrind, Node.js 20, concurrency 16, cycles 8,000 to 16,000): the driver alone took 120,210 instructions a cycle and the Leaser 136,387, so the runner adds ~16,200 (13.5%), about the 16,800-18,800 it adds on the in-process memory backend. ' +
    "At concurrency 16 it weighs more in CPU time than in instructions: after 100,000 cycles to warm up, the Leaser took 33-35 µs of user CPU a cycle against the driver's 25-27 (session 47, 3 runs each), and where that time goes is not located (in perf profiles, session 46, no symbol's time differs by more than ~0.6 µs a cycle; neither V8's GC threads nor the young generation's size explain it). At concurrency 1 it depends on the warm-up: after 2,000 cycles the Leaser took 67-88 µs of user CPU a cycle against the driver's 48-75 (3 runs each), with V8 completing 98 optimizations during the Leaser's 20,000 measured cycles against 38 during the driver's; after 30,000 cycles, 46 and 50 against 42 and 56 (2 runs each), no gap beyond the runs' spread. " +
    'Takeover: redis-semaphore and redlock-universal poll every 10 / 100 ms; the Leaser sleeps until the expiry that LEASE_HELD reports (plus up to 25 ms of jitter), and after a release it polls with its backoff (50 ms doubling).',
  ferretdb:
    "mongo-locks inserts and deletes a document (a unique index decides; no expiry check, no token). worklease's acquire is a findAndModify filtered on expiry, which FerretDB 1.x runs as a read then a write through its SQLite handler: that, not the library, is the 8-10x (the driver alone shows the same ratio as the Leaser). FerretDB 2.x (PostgreSQL with DocumentDB) is where the comparison means something for MongoDB users.",
  dynalite:
    "Both peers read the item before writing it (3 requests per cycle against 2). The Leaser adds few instructions to its driver on DynamoDB: counted on the client process alone in session 44 (callgrind, against DynamoDB Local 3.3.1, cycles N to 2N after 50 to warm up, N = 1,000 at concurrency 1 and 1,600 at 16), a Leaser cycle took 4.23 M instructions against the driver's 4.04 M (the driver then calling acquire, not acquireWithCheckpoint as the Leaser does) at concurrency 1 (+4.6%) and 3.79 M against 3.71 M at 16 (+2%). At concurrency 1 the driver handed a signal per call (as the Leaser hands it one) took 4.09 M: ~48 k of the 184 k is that signal, which the SDK subscribes to per request and raceAbort races (since session 46 the driver row hands its release one too, so that cost is on both rows). Where the rest of the Leaser ÷ driver gap at concurrency 16 in session 43's run (0.876; not in session 45's run) came from was not found: in a scratch run on dynalite at concurrency 16 (10 interleaved rounds of 1,600 cycles), the client process's CPU per cycle, GC included, had medians of 1,104 µs (Leaser) and 1,150 µs (driver) with the rounds overlapping widely, while the median cycles/s were 708 and 785 (0.90, not paired). Takeover after a crash: both peers wait exactly one lease from their read, so a waiter that starts with the holder takes over right at the expiry; one that arrives later into the lease waits a full lease more, which this scenario (waiter starts with the holder) does not show. After a release they keep sleeping out that lease.",
  postgres:
    'advisory-lock opens a new connection per lock, which is what bounds it at concurrency 16. Its takeover is the server waking a blocked pg_advisory_lock: no polling at all, but also no expiry (a hung holder holds forever).',
}

// Printed for FerretDB 2 alone: the timings are FerretDB 2.7's, and would say nothing of a genuine mongod.
const FERRETDB2_WHY =
  "Timed on their own in session 44 (a scratch run outside this bench, on FerretDB 2.7 over PostgreSQL 18 with DocumentDB: each command by `_id` over 16 documents, 5 interleaved runs of 1.5 s, medians), an insert followed by a delete, mongo-locks' pair, ran at 912 pairs/s at concurrency 1 and 1,842 at 16; a findAndModify upsert, worklease's acquire, at 1,460 and 2,963 a second, and an updateOne, its release, at 1,564 and 2,989. Computed from those rates, worklease's pair comes to ~755 and ~1,488 a second, 0.83 and 0.81 of mongo-locks': the same order as the driver-alone ratio in session 43's run (0.80 and 0.83). At concurrency 16, taking the acquire's `$or` on `released` out of its filter, or its majority write concern off, changed nothing beyond the runs' spread. worklease does not release by deleting: a fencing token has to outlast its lease."

// The ferretdb section runs against whatever MONGODB_URL or FERRETDB2_URL names: each text is about
// one server's own costs, and for a genuine mongod none was measured.
function ferretdbWhy(server: string | undefined): string | undefined {
  if (isFerretdb1(server)) return WHY.ferretdb
  return /^FerretDB v?2\b/.test(server ?? '') ? FERRETDB2_WHY : undefined
}

function renderStore(store: PeerStoreResult): string[] {
  const out = [`### ${store.store}${store.server ? `: ${store.server}` : ''}`, '']
  if (store.skipped) return [...out, `Skipped: ${store.skipped}`, '']
  const sides = store.sides ?? []
  if (store.error) out.push(`Failed part-way: ${store.error}`, '')
  for (const note of store.notes ?? []) out.push(`- ${note}`)
  if (store.notes?.length) out.push('')
  out.push(
    table(
      ['library', 'semantics', 'waiting acquire'],
      sides.map((side) => [side.label, side.semantics, side.waiting]),
    ),
    '',
  )
  const cells = store.cycles ?? []
  if (cells.length > 0) {
    const header = ['library']
    for (const cell of cells)
      header.push(
        `c${cell.concurrency} cycles/s`,
        `c${cell.concurrency} Leaser ÷ peer`,
        `c${cell.concurrency} driver ÷ peer`,
        `c${cell.concurrency} GC ms / 1,000 cycles`,
      )
    header.push('round trips / cycle')
    out.push(
      table(
        header,
        sides.map((side, i) => {
          const row = [side.label]
          for (const cell of cells) {
            row.push(range(cell.cyclesPerSecond[i]!))
            row.push(i < 2 ? '' : `**${range(cell.ratio[i]!)}**`)
            row.push(i < 2 ? '' : range(cell.driverRatio[i]!))
            row.push(range(cell.gcMsPerThousandCycles[i]!))
          }
          const trips = cells.map((cell) => cell.roundTripsPerCycle[i]!)
          const held = cells.reduce((sum, cell) => sum + cell.heldAfterRelease[i]!, 0)
          row.push(
            `${[...new Set(trips)].join(' / ')} ${side.roundTripUnit}${held ? ` (${held} acquires found a released key held ⚠)` : ''}`,
          )
          return row
        }),
      ),
      '',
    )
  }
  out.push(...renderCpu(sides, cells))
  const measured = sides.filter((side) => side.race || side.takeover || side.error)
  if (measured.length > 0) {
    out.push(
      table(
        [
          'library',
          'race: winners per round',
          'race: settle ms',
          'race: round trips per loser',
          'takeover after a crash: p50 / p99 ms past expiry',
          'takeover after a release: p50 / p99 ms',
        ],
        measured.map((side) => [
          side.label,
          side.race
            ? `${side.race.acquirers} acquirers: ${side.race.winners.join(', ')}${side.race.winners.every((w) => w === 1) ? '' : ' ⚠'}${side.race.errors ? `, ${side.race.errors} errors` : ''}`
            : (side.error ?? ''),
          side.race ? range(side.race.settleMs) : '',
          side.race ? String(side.race.roundTripsPerLoser) : '',
          latency(side.takeover?.find((t) => t.kind === 'crash')),
          latency(side.takeover?.find((t) => t.kind === 'release')),
        ]),
      ),
      '',
    )
  }
  out.push(...peersAhead(store))
  const why = store.store === 'ferretdb' ? ferretdbWhy(store.server) : WHY[store.store]
  if (why) out.push(`Why: ${why}`, '')
  return out
}

// The CPU times a peers cell can hold, in the order the report prints them.
const CPU_PARTS = [
  ['client', 'clientCpuUsPerCycle'],
  ['server', 'serverCpuUsPerCycle'],
  ['rest of machine', 'restOfMachineCpuUsPerCycle'],
] as const

/** The CPU parts `cell` measured, with their per-side spreads. */
const cpuPartsOf = (cell: PeerCycleCell) =>
  CPU_PARTS.flatMap(([name, field]) => (cell[field] ? [{ name, perSide: cell[field] }] : []))

/** Where a cycle's CPU goes, per side: the client process, the store's server, the rest of the machine. */
function renderCpu(sides: readonly { label: string }[], cells: readonly PeerCycleCell[]): string[] {
  const measured = cells.filter((cell) => cell.clientCpuUsPerCycle)
  if (measured.length === 0) return []
  const header = ['library']
  for (const cell of measured)
    for (const { name } of cpuPartsOf(cell)) header.push(`c${cell.concurrency} ${name} µs`)
  return [
    "CPU time a cycle, median [min–max] over the repetitions: **client** is this process's (user and system; every side's client lives in it, idle but for the side running); **server** the store server's own, where it runs on this machine and reports it (Redis: `INFO cpu`); **rest of machine** every other busy core-µs meanwhile (the store's server where it reports none, some of the kernel's work on the loopback, and whatever else ran: the bench's other servers idle, and any outside load), from ticks of 10 ms, so a small figure there is mostly rounding and may fall below 0. Where the cores are saturated, cycles/s fall as the sum grows; where a side waits on round trips, as at concurrency 1, these show its cost, not its speed.",
    '',
    table(
      header,
      sides.map((side, i) => {
        const row = [side.label]
        for (const cell of measured) for (const { perSide } of cpuPartsOf(cell)) row.push(range(perSide[i]!))
        return row
      }),
    ),
    '',
  ]
}

/** Side `i`'s CPU µs a cycle in `cell`, the medians of every part measured added up. */
function cpuSum(cell: PeerCycleCell, i: number): number {
  return round(cpuPartsOf(cell).reduce((sum, { perSide }) => sum + perSide[i]!.median, 0))
}

/**
 * Every peer whose cycles beat the Leaser's (median Leaser ÷ peer below 1) at some concurrency, with
 * what it does less and how the gap splits: the driver alone against the peer is the store work, the
 * Leaser against its own driver the runner's bookkeeping (both paired per repetition).
 */
function peersAhead(store: PeerStoreResult): string[] {
  const sides = store.sides ?? []
  const lines: string[] = []
  for (const [i, side] of sides.entries()) {
    if (i < 2) continue
    const cells = (store.cycles ?? []).filter((cell) => cell.ratio[i]!.median < 1)
    if (cells.length === 0) continue
    const where = cells
      .map((cell) => {
        const leaser = cell.ratio[i]!
        const driver = cell.driverRatio[i]!
        const runner = cell.ratio[1]!
        const noise = leaser.max >= 1 ? ', range reaches 1: within the noise of this run' : ''
        const parts = cpuPartsOf(cell).map(({ name }) => name)
        const cpuText = cell.clientCpuUsPerCycle
          ? `; CPU µs a cycle (${parts.join(' + ')}, medians): Leaser ${cpuSum(cell, 0)}, driver ${cpuSum(cell, 1)}, peer ${cpuSum(cell, i)}`
          : ''
        return `c${cell.concurrency}: Leaser ÷ peer ${range(leaser)}${noise}; driver alone ÷ peer ${driver.median}, Leaser ÷ its driver ${runner.median}${cpuText}`
      })
      .join('; ')
    lines.push(
      `- **${side.label}** is ahead (${where}). It does less: ${side.doesLess ?? 'not recorded for this library'}.`,
    )
  }
  if (lines.length === 0) return []
  return [
    'Where a peer comes out ahead of the Leaser, what it does less. "Driver alone ÷ peer" below 1 is store work the peer skips; "Leaser ÷ its driver" below 1 is the runner\'s side of the gap: its own work per cycle (a Lease object with its local deadline and seats in the Leaser\'s deadline wheel and renewal schedule, a timeout per call queued on one timer per call timeout, and the release call\'s AbortSignal, shared with calls that start close to it).',
    '',
    ...lines,
    '',
  ]
}
