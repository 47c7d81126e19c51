import { resolve } from 'node:path'
import { BATCH_RENEWAL_TARGETS, type BatchRenewalTarget } from './batch-renewal.js'
import { PEER_STORES, type PeerStore } from './peers/peers.js'
import { POOL_STORES, type PoolStoreName } from './pool/pool-stores.js'
import { RUNNER_COST_BACKENDS, type RunnerCostBackend } from './runner-cost.js'
import { BACKEND_NAMES, type BackendName } from './target.js'

export interface BenchOptions {
  readonly quick: boolean
  readonly backends: readonly BackendName[]
  /** Stores whose peer libraries run beside worklease. */
  readonly peers: readonly PeerStore[]
  readonly runnerCost: readonly RunnerCostBackend[]
  /** Leases held in the runner cost section (default 10,000). */
  readonly runnerCostLeases: number | undefined
  /** Stores the LeasePool fleet (real member processes) runs on. */
  readonly pool: readonly PoolStoreName[]
  /**
   * The pool members' lease ttl (default 6,000 ms; the renew and rebalance interval is a third). At
   * 3,000 ms the PostgreSQL join measured the machine, not the protocol: see render-pool.ts.
   */
  readonly poolTtlMs: number
  /** Where one process holds many leases with batch renewal and without. */
  readonly batchRenewal: readonly BatchRenewalTarget[]
  /** Whether `--batch-renewal` was given (else `batchRenewal` is the default: all). */
  readonly batchRenewalNamed: boolean
  /** How many (default 100,000; DynamoDB 10,000). */
  readonly batchRenewalLeases: number | undefined
  /** Where latest.json and latest.md go, as given (see {@link outDirOf}). */
  readonly outDir: string | undefined
}

const USAGE = `usage: pnpm bench [--quick] [--backends memory,sqlite,postgres,mariadb,ferretdb,dynalite]
                  [--peers dynalite,redis,ferretdb,postgres|none]
                  [--runner-cost memory,sqlite,postgres,ferretdb|none] [--runner-cost-leases N]
                  [--pool sqlite,postgres,mariadb|none] [--pool-ttl MS]
                  [--batch-renewal postgres,postgres18,ferretdb,dynamodb|none] [--batch-renewal-leases N]
                  [--out DIR]

  --quick        short runs (under 5 minutes in all); the default takes several times longer
  --backends     which backends to measure (default: all); servers come from POSTGRES_URL, MYSQL_URL,
                 MONGODB_URL (else FERRETDB2_URL), DYNAMODB_ENDPOINT, else the local ones (FerretDB 1.x
                 and dynalite start here);
                 each gets throughput, round trips, contention and takeover latency
  --peers        on which stores to run the peer lock libraries beside worklease (default: all;
                 Redis at REDIS_URL, else 127.0.0.1:6379); a store's server is started even if its
                 backend is not in --backends
  --runner-cost  which backends hold many leases in one process (default: all four)
  --runner-cost-leases  how many (default 10,000; FerretDB 1.x: 200)
  --pool         on which stores a LeasePool fleet of real processes runs (default: all three;
                 --quick: sqlite): 1,000 units, 10 members start, 5 join, 7 are SIGKILLed; convergence,
                 moves, overlaps and handoffs against issue 18's goals. Alone:
                 --backends none --peers none --runner-cost none --pool postgres
  --pool-ttl     the pool members' ttl in ms (default 6000; renew and rebalance every third of it)
  --batch-renewal  where one process holds many leases through the Leaser with batch renewal and
                 without (default: all; PostgreSQL 18 at POSTGRES18_URL, skipped without it; FerretDB 2.7
                 at FERRETDB2_URL, else FerretDB 1.x started here; DynamoDB Local at DYNAMODB_LOCAL_ENDPOINT,
                 else dynalite started here)
  --batch-renewal-leases  how many (default 100,000, DynamoDB 10,000, the per-lease baseline 10,000;
                 --quick: 500, DynamoDB 100, and no PostgreSQL 18 unless named)
  --out          directory for latest.json and latest.md (default: bench/results); a relative one is
                 relative to the directory pnpm bench was run from

  A flag's value follows it (--out DIR) or is joined to it at the first '=' (--out=DIR).`

/** Parses `pnpm bench` arguments; throws with the usage text on anything unknown. */
export function parseOptions(argv: readonly string[]): BenchOptions {
  let quick = false
  let backends: BackendName[] = [...BACKEND_NAMES]
  let peers: PeerStore[] = [...PEER_STORES]
  let runnerCost: RunnerCostBackend[] = [...RUNNER_COST_BACKENDS]
  let runnerCostLeases: number | undefined
  let pool: PoolStoreName[] | undefined
  let poolTtlMs = 6_000
  let batchRenewal: BatchRenewalTarget[] = [...BATCH_RENEWAL_TARGETS]
  let batchRenewalNamed = false
  let batchRenewalLeases: number | undefined
  let outDir: string | undefined
  const list = (value: string | undefined) =>
    (value ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter(Boolean)
  const pick = <T extends string>(flag: string, known: readonly T[], value: string | undefined): T[] => {
    const names = list(value)
    if (names.length === 1 && names[0] === 'none') return []
    if (names.length === 1 && names[0] === 'all') return [...known]
    const unknown = names.filter((name) => !(known as readonly string[]).includes(name))
    if (unknown.length > 0 || names.length === 0)
      throw new Error(`${flag}: unknown ${unknown.join(', ')}\n${USAGE}`)
    return known.filter((name) => names.includes(name))
  }
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!
    // --flag=value: split at the first '=' only (a directory may contain one).
    const equals = arg.startsWith('--') ? arg.indexOf('=') : -1
    const flag = equals === -1 ? arg : arg.slice(0, equals)
    const inline = equals === -1 ? undefined : arg.slice(equals + 1)
    // The flag's value: inline, else the next argument unless that is missing or another flag.
    const value = (): string => {
      const given = inline ?? argv[index + 1]
      if (given === undefined || given === '' || (inline === undefined && given.startsWith('--')))
        throw new Error(`${flag} needs a value${given ? `, got ${given}` : ''}\n${USAGE}`)
      if (inline === undefined) index++
      return given
    }
    // A flag without a value refuses one: --quick=no must not mean --quick.
    const noValue = () => {
      if (inline !== undefined) throw new Error(`${flag} takes no value, got ${arg}\n${USAGE}`)
    }
    switch (flag) {
      case '--':
        noValue()
        break
      case '--quick':
        noValue()
        quick = true
        break
      case '--backends':
        backends = pick(flag, BACKEND_NAMES, value())
        break
      case '--peers':
        peers = pick(flag, PEER_STORES, value())
        break
      case '--runner-cost':
        runnerCost = pick(flag, RUNNER_COST_BACKENDS, value())
        break
      case '--runner-cost-leases': {
        const n = Number(value())
        if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--runner-cost-leases takes a count\n${USAGE}`)
        runnerCostLeases = n
        break
      }
      case '--pool':
        pool = pick(flag, POOL_STORES, value())
        break
      case '--pool-ttl': {
        const n = Number(value())
        if (!Number.isSafeInteger(n) || n < 300)
          throw new Error(`--pool-ttl takes milliseconds (>= 300)\n${USAGE}`)
        poolTtlMs = n
        break
      }
      case '--batch-renewal':
        batchRenewal = pick(flag, BATCH_RENEWAL_TARGETS, value())
        batchRenewalNamed = true
        break
      case '--batch-renewal-leases': {
        const n = Number(value())
        if (!Number.isSafeInteger(n) || n < 1)
          throw new Error(`--batch-renewal-leases takes a count\n${USAGE}`)
        batchRenewalLeases = n
        break
      }
      case '--out':
        outDir = value()
        break
      case '--help':
      case '-h':
        noValue()
        console.log(USAGE)
        process.exit(0)
        break
      default:
        throw new Error(`unknown argument ${argv[index]}\n${USAGE}`)
    }
  }
  // --quick keeps under 5 minutes: one store (the embedded one) unless asked for more.
  pool ??= quick ? ['sqlite'] : [...POOL_STORES]
  return {
    quick,
    backends,
    peers,
    runnerCost,
    runnerCostLeases,
    pool,
    poolTtlMs,
    batchRenewal,
    batchRenewalNamed,
    batchRenewalLeases,
    outDir,
  }
}

/**
 * The batch renewal section's targets. `--quick` keeps within its 5 minutes: PostgreSQL 18 only
 * when `--batch-renewal` is given (and names it, or all).
 */
export function batchRenewalTargets(
  options: Pick<BenchOptions, 'quick' | 'batchRenewal' | 'batchRenewalNamed'>,
): BatchRenewalTarget[] {
  return options.quick && !options.batchRenewalNamed
    ? options.batchRenewal.filter((target) => target !== 'postgres18')
    : [...options.batchRenewal]
}

/**
 * Where `--out` points, absolute; `undefined` without it. `pnpm bench` runs in bench/ (pnpm --filter
 * runs a package's script in its directory) and sets INIT_CWD to the directory it was run from: a
 * relative `--out` is taken from there, else (run directly) from the working directory.
 */
export function outDirOf(
  options: Pick<BenchOptions, 'outDir'>,
  env: { readonly INIT_CWD?: string | undefined } = process.env,
  cwd: string = process.cwd(),
): string | undefined {
  return options.outDir === undefined ? undefined : resolve(env.INIT_CWD || cwd, options.outDir)
}
