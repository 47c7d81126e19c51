import { measureRunnerCost, type RunnerCostConfig, type RunnerCostResult } from './runner-cost.js'

/** The stores the batch renewal section holds many leases on. */
export const BATCH_RENEWAL_TARGETS = ['postgres', 'postgres18', 'ferretdb', 'dynamodb'] as const
export type BatchRenewalTarget = (typeof BATCH_RENEWAL_TARGETS)[number]

/** Where one target's server is, as the section found it. */
export interface BatchRenewalServer {
  readonly target: BatchRenewalTarget
  readonly server: string
  readonly url: string
  readonly backend: RunnerCostConfig['backend']
  readonly dynalite?: boolean
}

/** One target: the Leaser with batch renewal beside the per-lease baseline, same leases, same run. */
export interface BatchRenewalResult {
  readonly target: BatchRenewalTarget
  readonly server: string
  readonly leases: number
  /** Whether the backend declares renewMany; without it one run stands for both rows. */
  readonly batchCapable: boolean
  readonly batched: RunnerCostResult
  readonly single: RunnerCostResult
}

export interface BatchRenewalSettings {
  readonly leases: number
  readonly ttlMs: number
  readonly renewIntervalMs: number
  readonly renewJitter: number
  readonly warmupMs: number
  readonly windowMs: number
  readonly seedConcurrency: number
  /**
   * Leases of the per-lease baseline, when fewer than `leases`: one round trip per renewal cannot keep
   * 100,000 leases of ttl 30 s on this shared 2-core machine, so the full run measures it at 10,000.
   */
  readonly baselineLeases: number
}

/**
 * Holds `settings.leases` leases in one process through the Leaser twice, in fresh child processes:
 * once with the backend as it is (renewMany where declared) and once with renewMany hidden (one
 * round trip per renewal, as before issue 19), and reports round trips per renew interval and CPU.
 */
export async function measureBatchRenewal(
  server: BatchRenewalServer,
  settings: BatchRenewalSettings,
  log: (line: string) => void,
): Promise<BatchRenewalResult> {
  const base: RunnerCostConfig = {
    backend: server.backend,
    url: server.url,
    ...(server.dynalite ? { dynalite: true } : {}),
    leases: settings.leases,
    ttlMs: settings.ttlMs,
    renewIntervalMs: settings.renewIntervalMs,
    renewJitter: settings.renewJitter,
    warmupMs: settings.warmupMs,
    windowMs: settings.windowMs,
    seedConcurrency: settings.seedConcurrency,
  }
  const line = (label: string, r: RunnerCostResult) =>
    log(
      `  ${label}: ${r.held}/${r.leases} held, ${r.lost} lost, acquired in ${Math.round(r.acquireMs / 100) / 10} s; ` +
        `${r.roundTripsPerRenewInterval} round trips per renew interval (goal <= ${settings.leases / 100}), ` +
        `${r.renewalsPerSecond} renewals/s (expected ${r.expectedRenewalsPerSecond}), CPU ${r.cpuPercent}% of a core`,
    )
  const batchCapable = server.backend !== 'dynamodb' || !server.dynalite
  const batched = await measureRunnerCost({ ...base, renewal: 'batched' })
  line(batchCapable ? 'batched ' : 'per lease (no renewMany)', batched)
  const baselineLeases = Math.min(settings.leases, settings.baselineLeases)
  const single = batchCapable
    ? await measureRunnerCost({ ...base, leases: baselineLeases, renewal: 'single' })
    : batched
  if (batchCapable) line('per lease', single)
  return {
    target: server.target,
    server: server.server,
    leases: settings.leases,
    batchCapable,
    batched,
    single,
  }
}
