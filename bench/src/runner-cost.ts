import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { round } from './stats.js'

/** What the child process is told to do. */
export const RUNNER_COST_BACKENDS = ['memory', 'sqlite', 'postgres', 'ferretdb'] as const
export type RunnerCostBackend = (typeof RUNNER_COST_BACKENDS)[number]

/** What the child can open: the runner cost backends, and DynamoDB for the batch renewal section. */
export type ChildBackend = RunnerCostBackend | 'dynamodb'

export interface RunnerCostConfig {
  readonly backend: ChildBackend
  /** Connection string of the server (postgres, ferretdb), or the DynamoDB endpoint. */
  readonly url?: string
  /** DynamoDB at `url` is dynalite, which ignores ReturnValuesOnConditionCheckFailure. */
  readonly dynalite?: boolean
  /**
   * `'single'`: the backend is shown to the Leaser without renewMany, so each lease renews with its own
   * round trip (the per-lease baseline). Default `'batched'`: whatever the backend declares.
   */
  readonly renewal?: 'batched' | 'single'
  /**
   * Acquire as fast as the store takes them, this many at a time, instead of at an even pace over one
   * renew interval: 100,000 leases at an even pace over 10 s would time acquires out on this machine.
   */
  readonly seedConcurrency?: number
  readonly leases: number
  readonly ttlMs: number
  readonly renewIntervalMs: number
  readonly renewJitter: number
  readonly warmupMs: number
  readonly windowMs: number
}

/** What it measured over its window (CPU % of one core; memory after a forced GC). */
export interface RunnerCostSample {
  readonly backend: ChildBackend
  readonly leases: number
  /** Leases still held when the window started (must equal `leases`). */
  readonly held: number
  readonly acquireMs: number
  readonly windowMs: number
  readonly cpuPercent: number
  readonly cpuMsPerRenewal: number
  readonly renewalsPerSecond: number
  /** leases / (renewIntervalMs × (1 − renewJitter / 2)): jitter shortens each interval by up to `renewJitter`. */
  readonly expectedRenewalsPerSecond: number
  readonly lost: number
  readonly renewFailures: number
  /** Acquires that failed (timed out) while taking the leases: `held` is then below `leases`. */
  readonly acquireFailures: number
  /** Statements / commands / store operations the process sent during the window. */
  readonly windowRoundTrips: number
  /**
   * Round trips per renew interval (window round trips scaled to one `renewIntervalMs`): N with one
   * renewal per lease per round trip, as today; batch renewal would bring it to about N / batch size
   * (issue 19's goal: <= N / 100).
   */
  readonly roundTripsPerRenewInterval: number
  /** Round trips per renewal: 1 today; below 1 once renewals are batched. */
  readonly roundTripsPerRenewal: number
  readonly rssMiB: number
  readonly heapUsedMiB: number
  readonly heapBytesPerLease: number
  readonly rssBytesPerLease: number
}

export interface RunnerCostResult extends RunnerCostConfig, RunnerCostSample {
  /** CPU % at the default renew interval (ttl / 3), from the measured CPU per renewal. */
  readonly projectedCpuPercentAtDefaultInterval: number
}

/**
 * Runs {@link RunnerCostConfig} in a fresh Node.js process (with `--expose-gc`, through tsx) so the
 * memory and CPU it reports are the runner's and its backend's alone.
 *
 * ```ts
 * const result = await measureRunnerCost({ backend: 'memory', leases: 10_000, ttlMs: 30_000, ... })
 * ```
 */
/** The longest one measurement may take, seeding included (100,000 leases on PostgreSQL: about 2 minutes). */
const CHILD_LIMIT_MS = 8 * 60_000

export async function measureRunnerCost(config: RunnerCostConfig): Promise<RunnerCostResult> {
  const script = fileURLToPath(new URL('./runner-cost-child.ts', import.meta.url))
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--import', import.meta.resolve('tsx'), script, JSON.stringify(config)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  let output = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk: string) => {
    output += chunk
  })
  // A store that cannot keep up must cost the bench a row, not the whole run: FerretDB 1.x at 10,000
  // leases was still seeding after 17 minutes.
  const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_LIMIT_MS)
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  clearTimeout(timer)
  const line = output.trim().split('\n').pop()
  if (code === null) throw new Error(`did not finish within ${CHILD_LIMIT_MS / 60_000} minutes (killed)`)
  if (code !== 0 || !line) throw new Error(`runner cost child (${config.backend}) exited with ${code}`)
  const sample = JSON.parse(line) as RunnerCostSample
  const defaultRate = (config.leases * 1000) / ((config.ttlMs / 3) * (1 - config.renewJitter / 2))
  const rounded = Object.fromEntries(
    Object.entries(sample).map(([key, value]) => [key, typeof value === 'number' ? round(value) : value]),
  ) as unknown as RunnerCostSample
  return {
    ...config,
    ...rounded,
    projectedCpuPercentAtDefaultInterval: round((sample.cpuMsPerRenewal * defaultRate) / 10),
  }
}
