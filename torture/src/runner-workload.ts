import { isLeaseLostError, type Lease, Leaser, systemTimers, type Timers } from '@worklease/core'
import { type Backend, isWorkleaseError } from '@worklease/spec'
import type { CounterStore } from './counter-store.js'
import { monotonicNow } from './host-clock.js'
import { loadNdjson, NdjsonLog } from './ndjson-log.js'
import type { Random } from './random.js'

/** One Leaser configuration the runner workload uses. */
export interface RunnerLeaseConfig {
  ttlMs: number
  safetyMarginMs: number
}

/**
 * A deliberately broken runner, to show the belief check catches it end to end: `frozen-clock` gives
 * the Leaser a monotonic clock that stands still (a broken clock source), so its local deadline never
 * passes and `lease.held` keeps saying yes after the store gave the lease away.
 */
export type RunnerBug = 'frozen-clock'

/**
 * What the runner workload writes besides the backend calls (which go to the ordinary history
 * through a RecordingBackend). `b`: a belief: `lease.held` read at monotonic time `t` (taken just
 * before the read). `r`: how one `leaser.run` ended.
 */
export type RunnerLine =
  | {
      e: 'b'
      h: string
      w: string
      tok: string
      t: number
      held: boolean
      ttl: number
      margin: number
      off: number
    }
  | {
      e: 'r'
      h: string
      w: string
      tok?: string
      t0: number
      t1: number
      outcome: RunOutcome
      detail?: string
      /** Fenced writes that landed during this run, and those the fence refused (a newer token had claimed the counter). */
      landed: number
      refused: number
    }

/**
 * `ok`: `run` returned the callback's value. `lost`: it threw LeaseLostError. `failed`: it threw the
 * callback's own error (the workload throws one on purpose now and then). `not-acquired`: the acquire
 * gave up (LEASE_HELD or a store error after its timeout). `error`: anything else.
 */
export type RunOutcome = 'ok' | 'lost' | 'failed' | 'not-acquired' | 'error'

/** The downstream counter the runner jobs on `workId` increment, and a runner worker's progress row. */
export const runnerCounter = (workId: string) => `counter-runner-${workId}`
export const runnerProgress = (slot: number, index: number) => `runner-s${slot}-j${index}`

export const RUNNER_FILE_SUFFIX = '.runner.ndjson'

export class RunnerLog extends NdjsonLog<RunnerLine> {
  constructor(dir: string, process: string) {
    super(dir, process, RUNNER_FILE_SUFFIX)
  }
}

export function loadRunnerLog(dir: string): RunnerLine[] {
  return loadNdjson<RunnerLine>(dir, RUNNER_FILE_SUFFIX)
}

class JobFailed extends Error {
  override name = 'JobFailed'
}

const frozen = (): Timers => {
  const at = performance.now()
  return { now: () => at, setTimeout: systemTimers.setTimeout, clearTimeout: systemTimers.clearTimeout }
}

export interface RunnerWorkerOptions {
  backend: Backend
  holderId: string
  lease: RunnerLeaseConfig
  workIds: readonly string[]
  /** The counter each workId guards, and this worker's progress row. */
  counterFor: (workId: string) => string
  progressName: string
  store: CounterStore
  log: RunnerLog
  random: Random
  offset: () => number
  stopped: () => boolean
  bug?: RunnerBug
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const encoder = new TextEncoder()

/**
 * Jobs through `Leaser.run`, the way a user writes them: wait for the lease, read the checkpoint, then
 * steps of work, each a fenced increment of the workId's downstream counter followed by a checkpoint.
 * The work between claiming the counter and writing it sometimes outlasts the ttl, so only automatic
 * renewal keeps the lease; before each write the job asks `lease.held`, and that answer is recorded
 * as a belief the checker holds against the store's history.
 */
export async function runnerWorker(options: RunnerWorkerOptions): Promise<void> {
  const { backend, holderId, lease: config, store, log, random } = options
  const leaser = new Leaser({
    backend,
    holderId,
    ttlMs: config.ttlMs,
    safetyMarginMs: config.safetyMarginMs,
    ...(options.bug === 'frozen-clock' ? { timers: frozen() } : {}),
  })
  let seq = 0
  const believe = (lease: Lease): boolean => {
    const t = monotonicNow()
    const held = lease.held
    log.write({
      e: 'b',
      h: holderId,
      w: lease.workId,
      tok: lease.fencingToken.toString(),
      t,
      held,
      ttl: config.ttlMs,
      margin: config.safetyMarginMs,
      off: options.offset(),
    })
    return held
  }
  while (!options.stopped()) {
    await sleep(random.int(5, 60))
    const workId = random.pick(options.workIds)
    const counter = options.counterFor(workId)
    const steps = random.int(1, 4)
    const slowWork = random.chance(0.15)
    const failOnPurpose = random.chance(0.1)
    const onError = random.pick(['release', 'expire'] as const)
    let token: bigint | undefined
    let landed = 0
    let refused = 0
    const t0 = monotonicNow()
    const end = (outcome: RunOutcome, detail?: string) =>
      log.write({
        e: 'r',
        h: holderId,
        w: workId,
        ...(token !== undefined ? { tok: token.toString() } : {}),
        t0,
        t1: monotonicNow(),
        outcome,
        ...(detail ? { detail: detail.slice(0, 200) } : {}),
        landed,
        refused,
      })
    try {
      await leaser.run(
        workId,
        async (lease) => {
          token = lease.fencingToken
          await lease.readCheckpoint()
          for (let step = 0; step < steps; step++) {
            const value = store.claim(counter, lease.fencingToken)
            if (value === null) {
              refused++
              // Superseded already: the store says so, whatever we believe. Asked once more all the
              // same, as every job that completes does: the moment a newer token is proven.
              believe(lease)
              return
            }
            await sleep(
              slowWork && step === 0
                ? random.int(config.ttlMs + 100, Math.round(config.ttlMs * 1.6))
                : random.int(0, 20),
            )
            if (!believe(lease)) lease.throwIfLost()
            if (store.fencedWrite(counter, lease.fencingToken, value + 1, options.progressName)) landed++
            else refused++
            await lease.checkpoint(encoder.encode(`${holderId}#${lease.fencingToken}.${seq++}`))
          }
          if (failOnPurpose) throw new JobFailed(`job on ${workId} failed on purpose`)
          believe(lease)
        },
        { wait: true, timeoutMs: config.ttlMs * 2, onError },
      )
      end('ok')
    } catch (error) {
      if (isLeaseLostError(error)) end('lost', error.reason)
      else if (error instanceof JobFailed) end('failed', onError)
      else if (token === undefined)
        end('not-acquired', isWorkleaseError(error, 'LEASE_HELD') ? 'LEASE_HELD' : String(error))
      else end('error', String(error))
    }
  }
  await leaser.close({ timeoutMs: 1_000 })
}
