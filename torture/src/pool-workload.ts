import { type Lease, LeasePool, Leaser, type PoolUnit } from '@worklease/core'
import type { Backend } from '@worklease/spec'
import { monotonicNow } from './host-clock.js'
import { loadNdjson, NdjsonLog } from './ndjson-log.js'
import type { Random } from './random.js'
import type { RunnerLeaseConfig } from './runner-workload.js'

/** The group every pool member of a run joins; its unit leases are `pool/u/<unit>`, done marks `pool/d/<unit>`. */
export const POOL_GROUP = 'pool'

// Units whose handler may finish: the rest run until they are given up, lost or the run ends, so
// finished units never leave the pool without work to hand over.
const FINISHING_UNIT_PREFIX = 'f-'

/** A run's unit ids: `u-<i>` that never finish, then `f-<i>` that a handler run may finish. */
export function poolUnitIds(units: number, finishing: number): string[] {
  return [
    ...Array.from({ length: units }, (_, i) => `u-${i}`),
    ...Array.from({ length: finishing }, (_, i) => `${FINISHING_UNIT_PREFIX}${i}`),
  ]
}

/**
 * What the pool workload writes besides the backend calls (which the RecordingBackend puts in the
 * ordinary history). Times are the host's monotonic ms, taken before the thing they date.
 * - `read`: the handler's first read of a unit's checkpoint under one lease, as the handler got it.
 * - `step`: the handler asked `lease.held` before a step of work (a checkpoint); it works only on yes.
 * - `return`: the handler returned (after its final checkpoint when it was asked to stop).
 * - `handoff`: the pool reported the unit `released` after giving it up by consent; `confirmed` when
 *   its release ended the lease as released (`lease.lossError` unset). A pool reports a release that
 *   ended lost as `lost`, so an unconfirmed handoff is a violation (`pool-released-but-lost`).
 * - `finish`: the handler returned to finish its unit (not asked to stop; its last `lease.held` said yes).
 * - `done`: the pool reported the unit `done`: its done mark was set, so no member runs it again.
 * - `member`: a member joined (its first rebalance done) or left (close returned).
 */
export type PoolLine =
  | { e: 'read'; h: string; w: string; tok: string; t: number; read: string | null; clean: boolean }
  // `ttl` is the Leaser's (absent from histories kept before it was logged).
  | {
      e: 'step'
      h: string
      w: string
      tok: string
      t: number
      held: boolean
      margin: number
      ttl?: number
      off: number
    }
  | {
      e: 'return'
      h: string
      w: string
      tok: string
      t: number
      held: boolean
      stopped: boolean
      margin: number
      ttl?: number
      off: number
    }
  // `margin` is the Leaser's (absent from histories kept before it was logged).
  | { e: 'handoff'; h: string; w: string; tok: string; t: number; confirmed: boolean; margin?: number }
  | { e: 'finish'; h: string; w: string; tok: string; t: number }
  | { e: 'done'; h: string; w: string; tok: string; t: number }
  | { e: 'member'; h: string; t: number; what: 'joined' | 'left' | 'lost-unit' }

const POOL_FILE_SUFFIX = '.pool.ndjson'

/** One process's pool lines, appended with synchronous writes like the history. */
export class PoolLog extends NdjsonLog<PoolLine> {
  constructor(dir: string, process: string) {
    super(dir, process, POOL_FILE_SUFFIX)
  }

  /** Every pool line of a run's history directory (lines torn by SIGKILL are skipped). */
  static load(dir: string): PoolLine[] {
    return loadNdjson<PoolLine>(dir, POOL_FILE_SUFFIX)
  }
}

export interface PoolMemberOptions {
  backend: Backend
  /** Each generation of this member joins as `<holderPrefix>.<generation>`. */
  holderPrefix: string
  lease: RunnerLeaseConfig
  units: readonly string[]
  log: PoolLog
  random: Random
  offset: () => number
  stopped: () => boolean
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** Sleeps `ms`, or less if `signal` aborts first. */
const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })

/**
 * One pool member slot: joins the group, stays 0.5 to 5 s, leaves cleanly (`pool.close()`), and
 * joins again as a new member, until the run stops; the nemesis kills and pauses it with its process.
 * Its handler is what docs/pools.md tells users to write: read the checkpoint, then steps of work,
 * each a checkpoint after asking `lease.held`; asked to stop, a last checkpoint while still held,
 * then return. A third of the runs of a finishing unit (`f-<i>`) finish it after 1 to 5 steps.
 */
export async function poolMember(options: PoolMemberOptions): Promise<void> {
  const { backend, lease: config, log, random } = options
  let seq = 0
  for (let generation = 0; !options.stopped(); generation++) {
    const holderId = `${options.holderPrefix}.${generation}`
    const leaser = new Leaser({
      backend,
      holderId,
      ttlMs: config.ttlMs,
      safetyMarginMs: config.safetyMarginMs,
    })
    const leases = new Map<string, Lease>()
    const read = new WeakSet<Lease>()
    const handler = async (lease: Lease, unit: PoolUnit) => {
      leases.set(unit.id, lease)
      const base = { h: holderId, w: lease.workId, tok: lease.fencingToken.toString() }
      const held = () => {
        const t = monotonicNow()
        const answer = lease.held
        log.write({
          e: 'step',
          ...base,
          t,
          held: answer,
          margin: config.safetyMarginMs,
          ttl: config.ttlMs,
          off: options.offset(),
        })
        return answer
      }
      const checkpoint = () => lease.checkpoint(encoder.encode(`${holderId}#${base.tok}.${seq++}`))
      if (!read.has(lease)) {
        read.add(lease)
        const t = monotonicNow()
        const { state, cleanHandoff } = await lease.readCheckpoint()
        log.write({ e: 'read', ...base, t, read: state ? decoder.decode(state) : null, clean: cleanHandoff })
      }
      let stepsToFinish =
        unit.id.startsWith(FINISHING_UNIT_PREFIX) && random.int(0, 2) === 0
          ? random.int(1, 5)
          : Number.POSITIVE_INFINITY
      while (!unit.signal.aborted) {
        await pause(random.int(5, 60), unit.signal)
        if (unit.signal.aborted) break
        if (!held()) return
        await checkpoint()
        if (--stepsToFinish === 0 && !unit.signal.aborted && held()) {
          log.write({ e: 'finish', ...base, t: monotonicNow() })
          return
        }
      }
      // Asked to give the unit up (or lost): the successor resumes from this checkpoint.
      if (held()) await checkpoint()
      log.write({
        e: 'return',
        ...base,
        t: monotonicNow(),
        held: lease.held,
        stopped: unit.signal.aborted,
        margin: config.safetyMarginMs,
        ttl: config.ttlMs,
        off: options.offset(),
      })
    }
    const pool = new LeasePool({
      leaser,
      group: POOL_GROUP,
      units: options.units,
      handler,
      handlerRetry: { initialDelayMs: 50, maxDelayMs: 400 },
      random: () => random.next(),
    })
    pool.on((event) => {
      if (event.type === 'released') {
        const lease = leases.get(event.unit)
        if (lease) {
          log.write({
            e: 'handoff',
            h: holderId,
            w: lease.workId,
            tok: lease.fencingToken.toString(),
            t: monotonicNow(),
            confirmed: lease.lossError === undefined,
            margin: config.safetyMarginMs,
          })
        }
      } else if (event.type === 'done') {
        const lease = leases.get(event.unit)
        if (lease) {
          const tok = lease.fencingToken.toString()
          log.write({ e: 'done', h: holderId, w: lease.workId, tok, t: monotonicNow() })
        }
      } else if (event.type === 'lost') {
        log.write({ e: 'member', h: holderId, t: monotonicNow(), what: 'lost-unit' })
      }
    })
    // Joining waits for the membership lease; a store outage can make that long, and close() ends it.
    void pool.start().then(
      () => log.write({ e: 'member', h: holderId, t: monotonicNow(), what: 'joined' }),
      () => {},
    )
    const leaveAt = Date.now() + random.int(500, 5_000)
    while (Date.now() < leaveAt && !options.stopped()) await sleep(50)
    await pool.close({ timeoutMs: config.ttlMs })
    await leaser.close({ timeoutMs: 1_000 }).catch(() => {})
    log.write({ e: 'member', h: holderId, t: monotonicNow(), what: 'left' })
    await sleep(random.int(20, 300))
  }
}
