import { randomBytes } from 'node:crypto'
import type { LockSide } from './lock-side.js'
import {
  measurePeerCycles,
  measureRace,
  measureTakeover,
  type PeerCycleCell,
  type RaceResult,
  type TakeoverResult,
} from './measure.js'

/** The stores with peers, in report order. */
export const PEER_STORES = ['dynalite', 'redis', 'ferretdb', 'postgres'] as const
export type PeerStore = (typeof PEER_STORES)[number]

export interface PeerSettings {
  readonly concurrencies: readonly number[]
  readonly repetitions: number
  readonly durationMs: number
  readonly warmupMs: number
  /** ttl of the cycles' locks (long: a cycle never meets an expiry). */
  readonly ttlMs: number
  readonly raceAcquirers: number
  readonly raceRounds: number
  /** ttl of the takeover scenarios. */
  readonly takeoverTtlMs: number
  readonly takeoverRounds: number
  readonly takeoverParallel: number
}

export interface PeerSideResult {
  readonly label: string
  readonly semantics: string
  readonly waiting: string
  /** See {@link LockSide.doesLess}. */
  readonly doesLess?: string
  readonly roundTripUnit: string
  readonly race?: RaceResult
  readonly takeover?: readonly TakeoverResult[]
  readonly error?: string
}

export interface PeerStoreResult {
  readonly store: PeerStore
  readonly server?: string
  readonly notes?: readonly string[]
  /** Side 0 is worklease's Leaser, side 1 its driver alone (cycles only), then the peers. */
  readonly sides?: readonly PeerSideResult[]
  readonly cycles?: readonly PeerCycleCell[]
  readonly skipped?: string
  readonly error?: string
}

/** A store's sides, opened: worklease's Leaser, its driver alone, then the peers. */
export interface OpenedPeerStore {
  readonly server: string
  readonly notes?: string[]
  readonly sides: LockSide[]
  /**
   * The store server's CPU time so far, ms, where it runs on this machine and reports its own (Redis:
   * INFO cpu); `undefined` from a reading that failed.
   */
  readonly serverCpuMs?: () => Promise<number | undefined>
  /** Closes the connection `serverCpuMs` reads through (the sides close on their own). */
  readonly closeServerProbe?: () => Promise<void>
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0]!

/**
 * Everything the peers section measures on one store: interleaved cycles, the race, and takeover
 * after a crash and after a release, for worklease (side 0) and each peer.
 */
export async function measurePeerStore(
  store: PeerStore,
  open: (prefix: string) => Promise<OpenedPeerStore>,
  settings: PeerSettings,
  log: (line: string) => void,
): Promise<PeerStoreResult> {
  const prefix = `peers-${randomBytes(3).toString('hex')}`
  let opened: Awaited<ReturnType<typeof open>>
  try {
    opened = await open(prefix)
  } catch (error) {
    log(`  peers on ${store} skipped: ${errorText(error)}`)
    return { store, skipped: errorText(error) }
  }
  const { sides } = opened
  log(`  peers on ${store} (${opened.server}): ${sides.map((side) => side.label).join(', ')}`)
  const results: PeerSideResult[] = sides.map((side) => ({
    label: side.label,
    semantics: side.semantics,
    waiting: side.waiting,
    ...(side.doesLess ? { doesLess: side.doesLess } : {}),
    roundTripUnit: side.roundTripUnit,
  }))
  const result: { -readonly [K in keyof PeerStoreResult]: PeerStoreResult[K] } = {
    store,
    server: opened.server,
    ...(opened.notes ? { notes: opened.notes } : {}),
    sides: results,
  }
  try {
    result.cycles = await measurePeerCycles(
      sides,
      { ...settings, prefix: `${prefix}-cy` },
      log,
      opened.serverCpuMs,
    )
    for (const [index, side] of sides.entries()) {
      if (side.cyclesOnly) continue
      const entry = results[index] as { -readonly [K in keyof PeerSideResult]: PeerSideResult[K] }
      try {
        entry.race = await measureRace(side, {
          acquirers: settings.raceAcquirers,
          rounds: settings.raceRounds,
          prefix: `${prefix}-${index}`,
          ttlMs: settings.ttlMs,
        })
      } catch (error) {
        entry.error = `race: ${errorText(error)}`
      }
    }
    // Takeover: every side at once (each on its own keys), crash then release: the waits overlap.
    for (const kind of ['crash', 'release'] as const) {
      const measured = await Promise.all(
        sides.map((side, index) =>
          side.cyclesOnly
            ? undefined
            : measureTakeover(side, {
                kind,
                rounds: settings.takeoverRounds,
                parallel: settings.takeoverParallel,
                ttlMs: settings.takeoverTtlMs,
                prefix: `${prefix}-${index}-to`,
              }).catch(
                (error: unknown): TakeoverResult => ({
                  kind,
                  ttlMs: settings.takeoverTtlMs,
                  rounds: 0,
                  failures: settings.takeoverRounds,
                  notMeasured: `failed: ${errorText(error)}`,
                }),
              ),
        ),
      )
      for (const [index, takeover] of measured.entries()) {
        if (takeover === undefined) continue
        const entry = results[index] as { takeover?: TakeoverResult[] }
        entry.takeover = [...(entry.takeover ?? []), takeover]
      }
      log(
        `  takeover after ${kind}: ${sides
          .flatMap((side, i) => {
            const t = measured[i]
            if (t === undefined) return []
            return `${side.label} ${t.notMeasured ? 'n/a' : `p50 ${t.p50Ms} p99 ${t.p99Ms} ms`}`
          })
          .join('; ')}`,
      )
    }
  } catch (error) {
    log(
      `  peers on ${store} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    )
    result.error = errorText(error)
  } finally {
    for (const side of sides) await side.close().catch(() => undefined)
    await opened.closeServerProbe?.().catch(() => undefined)
  }
  return result
}
