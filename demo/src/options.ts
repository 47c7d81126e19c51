export const BACKENDS = ['sqlite', 'postgres', 'mysql', 'mongodb', 'dynamodb', 'memory'] as const
export type BackendName = (typeof BACKENDS)[number]

/** What one run of the demo does; every field has a flag. */
export interface DemoOptions {
  backend: BackendName
  workers: number
  items: number
  steps: number
  stepMs: number
  ttlMs: number
  seed: number
  fence: boolean
  live: 'auto' | 'on' | 'off'
  timeoutMs: number
  /** Keep the lease and downstream tables (and the SQLite file) for `worklease list` afterwards. */
  keep: boolean
  /** The workers form a LeasePool over the items instead of taking them one at a time. */
  pool: boolean
  help: boolean
}

export const HELP = `Usage: pnpm demo [options]

Starts worker processes that share a batch of work items through worklease leases. Each item is a
sequence of steps; progress is checkpointed in the lease, and every step result is written to a
downstream table through a fencing-token guard. Midway the demo SIGKILLs one worker holding a lease,
SIGSTOPs another past its ttl and then resumes it, and stops a third gracefully with SIGTERM. An audit
at the end decides the exit code (0 only if every check passes).

With --pool the workers form a LeasePool (@worklease/core) over the items instead: each runs about
its fair share at once; two more workers join, one leaves cleanly (SIGTERM) and one crashes
(SIGKILL), and the items flow between them by consent (clean handoffs) or after the ttl (unclean).
The audit checks that no item ran on two workers at once, no checkpoint was lost in a handoff, and
every consent handoff was clean. Defaults then: --items 24 --steps 30 --step-ms 150.

Options:
  --pool           the LeasePool demo (sqlite, postgres, mysql, mongodb, dynamodb; not memory)
  --backend NAME   where the leases live (default: sqlite)
                     sqlite    a SQLite file in a temp dir (embedded, no server)
                     postgres  POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test
                     mysql     MYSQL_URL, default mysql://root@127.0.0.1:3306/test (MySQL or MariaDB)
                     mongodb   MONGODB_URL, or a FerretDB it starts on 127.0.0.1 (built with Go once;
                               FerretDB 1.x does not make acquires atomic across connections, which
                               the downstream claim then shows as REFUSED)
                     dynamodb  DYNAMODB_ENDPOINT, or an in-process dynalite on 127.0.0.1
                     memory    MemoryBackend: single-process by nature, so the workers run inside the
                               demo's own process; kill, stop and resume are simulated by freezing
                               the worker's timers and I/O (a stopped process does nothing, time moves on)
                   The downstream table lives in the same database for sqlite, postgres and mysql, and
                   in a SQLite file in the temp dir for mongodb, dynamodb and memory.
  --workers N      worker processes running at once (default 4, at least 2); the killed and the
                   stopped worker are replaced, as a supervisor would
  --items M        work items (default 12)
  --steps S        steps per item (default 6)
  --step-ms MS     duration of one step (default 200; at most a fifth of the ttl)
  --ttl MS         lease ttl in milliseconds (default 1500)
  --seed N         seed of the schedule: the progress at which each strike comes, whom it picks
                   among the busy workers, item order, step times (default: random, printed in the
                   title so a run can be replayed; process timing still varies a little)
  --no-fence       negative control: workers write downstream without the token guard; the audit
                   must then fail (the paused worker's stale write is accepted)
  --live / --no-live
                   force the live terminal view on or off (default: on when stdout is a TTY)
  --timeout MS     give up (and fail) after this long (default 120000)
  --keep           keep the run's tables, and for sqlite its file, instead of dropping them, and
                   print the worklease command that lists the leases (sqlite, postgres, mysql)
  --help           this text

Every run creates its own tables (or collection) with unique names and drops them at the end
(unless --keep).`

function integer(flag: string, raw: string | undefined, min: number, max: number): number {
  const value = Number(raw)
  if (raw === undefined || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new Error(`${flag} needs an integer in ${min}..${max}, got ${raw ?? 'nothing'}`)
  }
  return value
}

/** Parses the command line (`--flag value` or `--flag=value`); throws with a message on bad input. */
export function parseOptions(argv: readonly string[]): DemoOptions {
  const options: DemoOptions = {
    backend: 'sqlite',
    workers: 4,
    items: 12,
    steps: 6,
    stepMs: 200,
    ttlMs: 1500,
    seed: Math.floor(Math.random() * 1_000_000),
    fence: true,
    live: 'auto',
    timeoutMs: 120_000,
    keep: false,
    pool: false,
    help: false,
  }
  const given = new Set<string>()
  const args = [...argv]
  while (args.length > 0) {
    let arg = args.shift()!
    // `pnpm demo -- --flag` passes the `--` through.
    if (arg === '--') continue
    let inline: string | undefined
    const eq = arg.indexOf('=')
    if (arg.startsWith('--') && eq > 0) {
      inline = arg.slice(eq + 1)
      arg = arg.slice(0, eq)
    }
    const value = () => inline ?? args.shift()
    given.add(arg)
    switch (arg) {
      case '--backend': {
        const name = value()
        if (!BACKENDS.includes(name as BackendName)) {
          throw new Error(`--backend must be one of ${BACKENDS.join(', ')}, got ${name ?? 'nothing'}`)
        }
        options.backend = name as BackendName
        break
      }
      case '--workers':
        options.workers = integer(arg, value(), 2, 32)
        break
      case '--items':
        options.items = integer(arg, value(), 1, 500)
        break
      case '--steps':
        options.steps = integer(arg, value(), 2, 100)
        break
      case '--step-ms':
        options.stepMs = integer(arg, value(), 10, 60_000)
        break
      case '--ttl':
        options.ttlMs = integer(arg, value(), 100, 600_000)
        break
      case '--seed':
        options.seed = integer(arg, value(), 0, 2 ** 32 - 1)
        break
      case '--timeout':
        options.timeoutMs = integer(arg, value(), 1_000, 3_600_000)
        break
      case '--no-fence':
        options.fence = false
        break
      case '--live':
        options.live = 'on'
        break
      case '--no-live':
        options.live = 'off'
        break
      case '--keep':
        options.keep = true
        break
      case '--pool':
        options.pool = true
        break
      case '--help':
      case '-h':
        options.help = true
        break
      default:
        throw new Error(`unknown option ${arg} (see --help)`)
    }
  }
  if (options.pool) {
    // All of a pool's items run at once, so it takes more and longer items to see them move.
    if (!given.has('--items')) options.items = 24
    if (!given.has('--steps')) options.steps = 30
    if (!given.has('--step-ms')) options.stepMs = 150
    if (options.backend === 'memory') {
      throw new Error('--pool needs worker processes sharing a store: not --backend memory')
    }
  }
  if (options.keep && !['sqlite', 'postgres', 'mysql'].includes(options.backend)) {
    throw new Error(`--keep works with --backend sqlite, postgres or mysql, not ${options.backend}`)
  }
  // Between two checkpoints a worker makes no database call, so that is where the demo stops it; the
  // checkpoints must come often enough that the background renew never fires in that gap.
  if (options.stepMs * 5 > options.ttlMs) {
    throw new Error(`--step-ms (${options.stepMs}) must be at most a fifth of --ttl (${options.ttlMs})`)
  }
  return options
}
