import type { BatchRenewalResult } from './batch-renewal.js'
import { isFerretdb1 } from './is-ferretdb1.js'
import { renderPool } from './pool/render-pool.js'
import { renderPeers, renderTakeover } from './report-peers.js'
import type { BackendResult, BenchResults } from './results.js'
import type { RunnerCostResult } from './runner-cost.js'
import type { Spread } from './stats.js'

/** Milliseconds, shown in µs below 1 ms so in-process numbers stay readable. */
const ms = (value: number) => (value < 1 ? `${Number((value * 1000).toPrecision(3))} µs` : `${value} ms`)
const range = (value: Spread) => `${value.median} [${value.min}–${value.max}]`
const table = (header: readonly string[], rows: readonly (readonly string[])[]) =>
  [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n')

const measured = (backends: readonly BackendResult[]) => backends.filter((backend) => backend.throughput)

const HAPPY_COLUMNS = [
  'acquire (new workId)',
  'acquire (released workId)',
  'acquireWithCheckpoint (released workId, 1 KiB state)',
  'checkpoint',
  'renew',
  'readCheckpoint',
  'release',
  'Leaser: acquire, then readCheckpoint',
]
const FAILURE_COLUMNS: readonly [string, string][] = [
  ['acquire (held)', 'LEASE_HELD'],
  ['checkpoint (fenced)', 'FENCED'],
  ['renew (fenced)', 'FENCED'],
  ['renew (expired)', 'LEASE_EXPIRED'],
  ['release (fenced)', 'FENCED'],
  ['readCheckpoint (fenced)', 'FENCED'],
]

// Why a backend's ratio can sit below 0.9, and what would close the gap; printed when it does.
const BELOW_THRESHOLD: Record<string, string> = {
  memory:
    "No I/O: a baseline call is a Map update of well under a microsecond, so the library's own work per call " +
    'is a large share. Records the backend made itself carry a private-field brand and are not validated again ' +
    '(a WeakSet did that before, at several times the cost of the record); what is left is what the contract ' +
    'asks for on input a caller controls: the ids and ttl checked, the options read once, the state copied (the ' +
    'baseline copies it too), a checkpoint sequence drawn from the clock, a frozen LeaseRecord with a Date per ' +
    'acquire, each clock reading checked to be a time (since session 26: a NaN clock stored a lease no clock ' +
    'saw as live), and the brand check on every later call. Nearly all of the gap is acquire (p50 ~1 µs against ' +
    '~0.4 µs; checkpoint, renew and release are within 10% of the baseline): in a CPU profile of acquire + ' +
    'release (session 17, in-process, ~0.9 µs a pair) the LeaseRecord is 19% (its Date ~50 ns, freezing it ~35 ns, ' +
    'measured apart) and checking the two ids 7%; the rest is the Map work and clock reads the baseline does too. ' +
    'In absolute terms it is a fraction of a microsecond per call, against 100 µs or more for any networked ' +
    'round trip, which is why no networked backend shows it. Counted in session 42 with callgrind (instructions, ' +
    'repeatable whatever the load: node --single-threaded --predictable, 50,000 cycles against 100,000, in a ' +
    'bare loop without this harness): a cycle is 13,710 instructions, the baseline 9,981. Without any ' +
    'check on caller input, the clock reading for the checkpoint sequence and the brand check it would be ' +
    '12,352; only without the freeze and the Date as well ' +
    '(11,111) would this ratio reach 0.9, given the ~6,800 instructions of the harness on both sides. ' +
    'So 0.9 asks for a LeaseRecord other than the one the contract describes; it is not taken.',
  sqlite:
    'SQLite runs in this process, so a cycle is CPU: ~200 µs of it with synchronous=OFF (measured in session 12, ' +
    'in-process, medians of 6 runs), nearly all in better-sqlite3 preparing and running the 4 statements, which ' +
    'both sides send text for text. The driver spent ~13 µs more a cycle than the baseline (203 against 190 µs), ' +
    "~3 µs a call; none of worklease's own functions reaches 0.3% of a profile, the difference shows in " +
    "better-sqlite3's prepare and in GC. A slow fsync in one 200 ms --quick slice still moves that slice's ratio a " +
    'lot (see the ranges).',
  ferretdb:
    'FerretDB on its SQLite handler completes tens of cycles per second, so a quick repetition counts a few dozen ' +
    'cycles and one slow fsync moves a ratio by 10% or more; check that the range includes 1.0, or run the full ' +
    'benchmark. Both sides send the same commands (1 per operation).',
}

function explainUnknown(backend: BackendResult): string {
  const cells = backend.throughput ?? []
  const sameTrips = cells.every(
    (cell) => Math.abs(cell.worklease.roundTripsPerCycle - cell.baseline.roundTripsPerCycle) < 0.5,
  )
  const noisy = cells.filter((cell) => cell.ratio.min < 1 && cell.ratio.max > 1).length
  const parts: string[] = []
  if (noisy > 0)
    parts.push(
      `the range of ${noisy} of ${cells.length} cells includes 1.0, so this run could not tell the sides apart there`,
    )
  const moreTrips = cells.some(
    (cell) => cell.worklease.roundTripsPerCycle - cell.baseline.roundTripsPerCycle >= 0.5,
  )
  if (sameTrips) parts.push('both sides sent the same round trips per cycle')
  else if (!moreTrips)
    parts.push(
      'worklease sent no more round trips per cycle than the baseline (fewer where workers contend for one workId), so the gap is in the work per call, not the number of calls',
    )
  else
    parts.push(
      'worklease sent more round trips per cycle than the baseline (see Cycles per second): that is the gap',
    )
  return `${parts.join('; ')}. Rerun on a quieter machine or without --quick before reading it as overhead.`
}

/** latest.md: the tables, the machine, and how to read them. */
export function renderMarkdown(results: BenchResults): string {
  const { machine, settings } = results
  const out: string[] = []
  out.push('# worklease benchmarks', '')
  out.push(
    `\`pnpm bench${results.mode === 'quick' ? ' --quick' : ''}\`, ${results.startedAt}, ${results.durationSeconds} s. ` +
      `${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os}, Node.js ${machine.node}; ` +
      `1-minute load average at start ${machine.loadAverageAtStart}.`,
    '',
    '> The machine is shared with other work (test runs of other packages), so absolute numbers are noisy. ' +
      'The ratios are the result: worklease and the hand-written baseline run interleaved (AB, BA, ...) in the ' +
      'same process, through the same client and pool, so load changes hit both sides.',
    '',
  )

  out.push('## Servers', '')
  out.push(
    table(
      ['backend', 'server', 'where', 'notes'],
      results.backends.map((backend) => [
        backend.name,
        backend.server ?? '—',
        backend.origin ?? '—',
        backend.skipped
          ? `skipped: ${backend.skipped}`
          : [...(backend.notes ?? []), backend.error ? `error: ${backend.error}` : '']
              .filter(Boolean)
              .join('; '),
      ]),
    ),
    '',
  )

  const cellsOf = measured(results.backends)
  const cellNames = settings.concurrencies.flatMap((c) => settings.workIdCounts.map((n) => [c, n] as const))
  out.push('## Throughput ratio worklease / baseline', '')
  out.push(
    `Lease cycles per second (acquire, checkpoint ${settings.stateBytes} B, renew, release) through worklease's ` +
      'driver divided by the same statements written by hand, per repetition; median [min–max] over ' +
      `${settings.repetitions} repetitions (memory: ${settings.inProcessRepetitions}, as its microsecond cycles ` +
      `spread widest) of ${settings.durationMs} ms per side. 1.00 = no cost; 0.90 = worklease ` +
      'completes 10% fewer cycles. c = concurrent workers, n = distinct workIds.',
    '',
  )
  out.push(
    table(
      ['backend', 'overall (median of cells)', ...cellNames.map(([c, n]) => `c${c} n${n}`)],
      cellsOf.map((backend) => [
        `**${backend.name}**`,
        `**${backend.ratio!.median}**`,
        ...cellNames.map(([c, n]) => {
          const cell = backend.throughput!.find((x) => x.concurrency === c && x.workIds === n)
          return cell ? range(cell.ratio) : '—'
        }),
      ]),
    ),
    '',
  )
  out.push(...statementDriftLines(cellsOf))

  out.push('## Cycles per second', '')
  out.push(
    'Median [min–max] over repetitions. Round trips per cycle count both the cycle and any acquire that met a held ' +
      'lease (with n = 1, concurrent workers mostly find it held: "held/cycle"). A lost cycle is one abandoned ' +
      'because a later call of the cycle found the lease taken: it happens only where two acquires can both win ' +
      '(see Contention).',
    '',
  )
  out.push(
    table(
      [
        'backend',
        'c',
        'n',
        'worklease cycles/s',
        'baseline cycles/s',
        'ratio',
        'round trips/cycle (wl / base)',
        'held/cycle (wl / base)',
        'lost cycles (wl / base)',
      ],
      cellsOf.flatMap((backend) =>
        backend.throughput!.map((cell) => [
          backend.name,
          String(cell.concurrency),
          String(cell.workIds),
          range(cell.worklease.cyclesPerSecond),
          range(cell.baseline.cyclesPerSecond),
          String(cell.ratio.median),
          `${cell.worklease.roundTripsPerCycle} / ${cell.baseline.roundTripsPerCycle}`,
          `${cell.worklease.heldPerCycle} / ${cell.baseline.heldPerCycle}`,
          `${cell.worklease.lostCycles} / ${cell.baseline.lostCycles}`,
        ]),
      ),
    ),
    '',
  )

  out.push('## Latency per operation (p50 / p99)', '')
  out.push(
    'Over every completed cycle of every repetition, estimated from the timed ones: each worker times its ' +
      'first 1,000 cycles, then one in 16, which counts for 16; wl = worklease, base = hand-written baseline.',
    '',
  )
  const ops = ['acquire', 'checkpoint', 'renew', 'release'] as const
  out.push(
    table(
      ['backend', 'c', 'n', ...ops.flatMap((op) => [`${op} wl`, `${op} base`])],
      cellsOf.flatMap((backend) =>
        backend.throughput!.map((cell) => [
          backend.name,
          String(cell.concurrency),
          String(cell.workIds),
          ...ops.flatMap((op) => [
            `${ms(cell.worklease.latencyMs[op].p50)} / ${ms(cell.worklease.latencyMs[op].p99)}`,
            `${ms(cell.baseline.latencyMs[op].p50)} / ${ms(cell.baseline.latencyMs[op].p99)}`,
          ]),
        ]),
      ),
    ),
    '',
  )

  const withTrips = results.backends.filter((backend) => backend.roundTrips)
  out.push('## Round trips per operation', '')
  out.push(
    'Statements (Kysely log hook), commands (MongoDB command monitoring), HTTP requests (AWS SDK middleware) or ' +
      'store operations (memory) per call, counted as the driver tests count them. The contract: 1 on every happy ' +
      'path; a failed renew may read once more to tell FENCED from LEASE_EXPIRED. The baseline sends 1 per call. ' +
      'acquireWithCheckpoint is an acquire that also returns the checkpoint (— where the driver has none); ' +
      'the last column is a resuming takeover through the Leaser, which then reads from the acquire. ' +
      'A mark ⚠ means the call did not end as expected.',
    '',
  )
  const cellOf = (call: { roundTrips: number; outcome: string } | undefined, expected: string) =>
    call ? `${call.roundTrips}${call.outcome === expected ? '' : ` ⚠ ${call.outcome}`}` : '—'
  out.push(
    table(
      ['backend', ...HAPPY_COLUMNS, ...FAILURE_COLUMNS.map(([name]) => name)],
      withTrips.map((backend) => [
        backend.name,
        ...HAPPY_COLUMNS.map((name) => cellOf(backend.roundTrips!.happy[name], 'ok')),
        ...FAILURE_COLUMNS.map(([name, code]) => cellOf(backend.roundTrips!.failure[name], code)),
      ]),
    ),
    '',
  )

  const withContention = results.backends.filter((backend) => backend.contention)
  out.push('## Contention', '')
  out.push(
    `${settings.contentionAcquirers} concurrent acquires of one free workId, launched in the same tick, ` +
      `${settings.contentionRounds} rounds (a fresh workId each). Winners must be 1 in every round. Settle = until the ` +
      'last acquire answered, median [min–max]. "new": the workId was never leased, so the insert of its ' +
      'row decides; "released": its last lease was released, so a conditional update decides (the everyday handoff).',
    '',
  )
  out.push(
    table(
      [
        'backend',
        'workId',
        'winners per round',
        'settle ms (worklease)',
        'settle ms (baseline)',
        'baseline winners',
        'round trips per loser',
        'store errors',
      ],
      withContention.flatMap((backend) =>
        backend.contention!.map((c) => [
          backend.name,
          c.kind,
          `${c.winners.join(', ')}${c.winners.every((w) => w === 1) ? '' : ' ⚠'}`,
          range(c.settleMs),
          range(c.baselineSettleMs),
          `${c.baselineWinners.join(', ')}${c.baselineWinners.every((w) => w === 1) ? '' : ' ⚠'}`,
          String(c.roundTripsPerLoser),
          String(c.otherErrors),
        ]),
      ),
    ),
    '',
  )

  out.push(...renderTakeover(results))
  out.push(...renderPeers(results))

  out.push(...renderListScale(results))
  out.push(...renderPool(results))

  out.push('## Runner cost', '')
  const costs = results.runnerCost
  const config = costs.find((cost): cost is RunnerCostResult => !('error' in cost))
  if (config) {
    out.push(
      `One process with a \`Leaser\` holding many leases (ttl ${config.ttlMs / 1000} s; count per row). ` +
        'In-process stores (memory, SQLite) renew every 2 s, shorter than the default ttl/3, so the window holds several ' +
        "renewal rounds; servers (PostgreSQL, FerretDB) at the default ttl/3 (10 s), the interval issue 19's goal is " +
        `stated for. Jitter ${config.renewJitter}; the expected rate is leases / (interval × (1 − jitter / 2)). ` +
        'Leases are acquired at an even pace over one interval (or as fast as the store takes them), then ' +
        `${config.warmupMs / 1000} s of warm-up. CPU is % of one core over the window (process.cpuUsage: runner + ` +
        "driver + in-process store; SQLite runs in-process, a server's own CPU is not counted), memory after a forced " +
        `GC. "CPU % at ttl/3" projects the measured CPU per renewal onto the default interval (${config.ttlMs / 3000} s). ` +
        '**Round trips per renew interval**: statements / commands / store operations sent in the window, scaled to ' +
        'one interval. Backends with `renewMany` (memory, SQLite, PostgreSQL, FerretDB) renew in batches; see ' +
        '"Batch renewal" below for 100,000 leases beside the per-lease baseline.',
      '',
    )
  }
  out.push(
    table(
      [
        'backend',
        'leases',
        'renew interval s',
        'round trips / renew interval (goal ≤ N/100)',
        'round trips / renewal',
        'renewals/s (expected)',
        'CPU %',
        'CPU ms/renewal',
        'CPU % at ttl/3',
        'heap MiB',
        'heap bytes/lease',
        'RSS MiB',
        'leases held / lost',
        'window s',
      ],
      costs.map((cost) => {
        if ('error' in cost)
          return [cost.backend, `failed: ${cost.error}`, '', '', '', '', '', '', '', '', '', '', '', '']
        const c = cost as RunnerCostResult
        return [
          c.backend,
          c.leases.toLocaleString('en'),
          String(c.renewIntervalMs / 1000),
          `${c.roundTripsPerRenewInterval} (${Math.round(c.leases / 100)})`,
          perRenewal(c.roundTripsPerRenewal),
          `${c.renewalsPerSecond} (${c.expectedRenewalsPerSecond})`,
          String(c.cpuPercent),
          perRenewal(c.cpuMsPerRenewal),
          perRenewal(c.projectedCpuPercentAtDefaultInterval),
          String(c.heapUsedMiB),
          String(c.heapBytesPerLease),
          String(c.rssMiB),
          `${c.held} / ${c.lost}${c.acquireFailures ? ` (${c.acquireFailures} acquires failed ⚠)` : ''}`,
          String(Math.round(c.windowMs / 100) / 10),
        ]
      }),
    ),
    '',
  )

  out.push(...renderBatchRenewal(results))

  const below = cellsOf.filter((backend) => backend.ratio!.median < 0.9)
  if (below.length > 0) {
    out.push('## Below 0.9', '')
    for (const backend of below) {
      out.push(
        `- **${backend.name}** (${backend.ratio!.median}): ${
          (backend.name === 'ferretdb' && !isFerretdb1(backend.server)
            ? undefined
            : BELOW_THRESHOLD[backend.name]) ?? explainUnknown(backend)
        }`,
      )
    }
    out.push('')
  }

  out.push('## How to read the ratios', '')
  out.push(
    '- **ratio = worklease cycles/s ÷ baseline cycles/s**, taken per repetition (both sides back to back) and summarized ' +
      'as the median with its range. 1.0 means the library costs nothing over writing the statements yourself; ' +
      'below 1 is its overhead (validation, record objects, error mapping, extra round trips).',
    '- The baseline sends the statements/commands the driver sends (copied from its source), through the same client ' +
      'and pool, on its own table; it is what a careful hand-written implementation costs, not a strawman. The SQL ' +
      "baseline builds each statement with Kysely's sql template per call, as Kysely's documentation writes them; " +
      'the Kysely driver compiles each statement shape once and binds values per call (the texts sent are checked ' +
      'equal under the ratio table).',
    '- A range that straddles 1.0 means the difference is below the noise of this machine. Compare ratios, not ' +
      'absolute cycles/s, across runs and machines.',
    "- memory has no I/O, so its ratio shows the library's CPU cost per call at full magnification; for the " +
      'network backends that cost is a small fraction of a round trip.',
    '',
  )
  return out.join('\n')
}

/** The leases the rows' `mode` runs held, as measured ("500", or "500 / 2,000" where they differ). */
function heldLeases(rows: readonly BatchRenewalResult[], mode: 'batched' | 'single'): string {
  const counts = [...new Set(rows.map((row) => row[mode].leases))]
  return counts.length > 0 ? counts.map((count) => count.toLocaleString('en-US')).join(' / ') : 'none'
}

/** Issue 17's goal: listing 100,000 leases pages in bounded memory. */
function renderBatchRenewal(results: BenchResults): string[] {
  const rows = results.batchRenewal
  if (!rows || rows.length === 0) return []
  const measured = rows.filter((row): row is BatchRenewalResult => 'batched' in row)
  const first = measured[0]?.batched
  const dynamo = measured.filter((row) => row.target === 'dynamodb')
  const others = measured.filter((row) => row.target !== 'dynamodb')
  const out = ['## Batch renewal', '']
  out.push(
    "One process holds N leases through the `Leaser` (issue 19, part 2's goal: ≤ N/100 round trips per renew " +
      'interval and under 5% of a core at 100,000 leases), twice per store in fresh processes: **batched** (the ' +
      "backend's `renewMany`, renewals falling due within a tenth of the interval coalesced, chunks of 1,000) and " +
      '**per lease** (`renewMany` hidden: one round trip per renewal, the baseline). Leases are seeded through the ' +
      'Leaser as fast as the store takes them, 64 at a time' +
      (first
        ? `; ttl ${first.ttlMs / 1000} s, renew interval ${first.renewIntervalMs / 1000} s, jitter ${first.renewJitter}, ` +
          `${first.warmupMs / 1000} s of warm-up, a ${first.windowMs / 1000} s window`
        : '') +
      (results.mode === 'quick'
        ? ` (**--quick: ${heldLeases(others, 'batched')} leases (DynamoDB ${heldLeases(dynamo, 'batched')}), renewed every second, and a 2 s window**; the full run holds 100,000, DynamoDB 10,000, at ttl 30 s)`
        : '') +
      ". CPU is % of one core for the whole process (runner + driver), not the server's. DynamoDB renews in chunks of 25 " +
      '(BatchExecuteStatement: 25 conditional PartiQL UPDATEs a request, each answered on its own; BatchWriteItem takes no ' +
      `conditions and TransactWriteItems fails whole); its per-lease row holds ${heldLeases(dynamo, 'single')} leases (DynamoDB Local seeds slowly), and on dynalite, which has no PartiQL, its one row renews one lease per request.`,
    '',
  )
  out.push(
    table(
      [
        'store',
        'leases',
        'mode',
        'round trips / renew interval (goal ≤ N/100)',
        'round trips / renewal',
        'renewals/s (expected)',
        'CPU % of a core',
        'held / lost',
        'seeded in s',
      ],
      rows.flatMap((row) => {
        if (!('batched' in row)) return [[row.target, '', '', `skipped: ${row.skipped}`, '', '', '', '', '']]
        const modes = row.batchCapable ? (['batched', 'single'] as const) : (['single'] as const)
        return modes.map((mode) => {
          const c = row[mode]
          return [
            `${row.target}: ${row.server}`,
            c.leases.toLocaleString('en'),
            mode === 'batched' ? 'batched' : row.batchCapable ? 'per lease' : 'per lease (no renewMany)',
            `${c.roundTripsPerRenewInterval} (${Math.round(c.leases / 100)})`,
            perRenewal(c.roundTripsPerRenewal),
            `${c.renewalsPerSecond} (${c.expectedRenewalsPerSecond})`,
            String(c.cpuPercent),
            `${c.held} / ${c.lost}${c.acquireFailures ? ` (${c.acquireFailures} acquires failed ⚠)` : ''}`,
            String(Math.round(c.acquireMs / 100) / 10),
          ]
        })
      }),
    ),
    '',
  )
  return out
}

// A figure divided by the renewals in the window: a window that held none measured nothing, which
// the table says rather than printing JSON's null for the NaN.
function perRenewal(value: number | null): string {
  return typeof value === 'number' && Number.isFinite(value)
    ? String(value)
    : 'n/a: no renewal in the window ⚠'
}

function renderListScale(results: BenchResults): string[] {
  const scale = results.listScale
  if (!scale) return []
  const out = ['## Listing 100,000 leases (PostgreSQL)', '']
  if ('error' in scale) return [...out, `failed: ${scale.error}`, '']
  out.push(
    `\`KyselyBackend.list\` through a ${scale.leases.toLocaleString('en')}-lease table, ${scale.pageSize} per page, as ` +
      '`worklease list` reads it: one SELECT over a primary-key range per page. The heap is sampled after every page' +
      `${scale.afterGc ? ' and a forced GC' : ' (no --expose-gc: garbage included)'}; a listing that kept what it read would ` +
      'grow with the table (100,000 listings are tens of MiB), one that pages stays flat.',
    '',
    `| leases listed | pages | seconds | leases/s | heap before MiB | peak heap growth MiB |`,
    '| --- | --- | --- | --- | --- | --- |',
    `| ${scale.listed.toLocaleString('en')} | ${scale.pages} | ${scale.seconds} | ${scale.leasesPerSecond.toLocaleString('en')} | ${scale.heapBaselineMiB} | ${scale.peakHeapGrowthMiB} |`,
    '',
  )
  return out
}

// The baselines are hand copies of the drivers' statements (commands, requests); the bench compares
// what both sides sent, so a driver change that its baseline missed shows here instead of as a ratio.
function statementDriftLines(backends: readonly BackendResult[]): string[] {
  const compared = backends.filter((backend) => backend.statementDrift)
  if (compared.length === 0) return []
  const lines = compared.map(({ name, statementDrift: drift }) => {
    const { sent, onlyWorklease, onlyBaseline } = drift!
    if (onlyWorklease.length + onlyBaseline.length === 0) {
      return `- **${name}**: the baseline sent the driver's ${sent} distinct statements, text for text.`
    }
    // Each text from where it parts from the closest one of the other side: that is the drift.
    const shown = (texts: readonly string[], others: readonly string[]) =>
      texts
        .map((text) => {
          const from = Math.max(0, ...others.map((other) => commonPrefix(text, other)))
          const flat = text.slice(Math.max(0, from - 40), from + 80).replace(/\s+/g, ' ')
          return `\`…${flat}…\``
        })
        .join('; ') || 'none'
    return `- **${name}**: ⚠ the statements differ. Only the driver: ${shown(onlyWorklease, onlyBaseline)}. Only the baseline: ${shown(onlyBaseline, onlyWorklease)}.`
  })
  return [
    'Statements sent in these cells, compared by their text (SQL) or shape (MongoDB: fields and BSON types; DynamoDB: expressions and value types), table names aside:',
    '',
    ...lines,
    '',
  ]
}

function commonPrefix(a: string, b: string): number {
  let i = 0
  while (i < a.length && a[i] === b[i]) i++
  return i
}
