import type { Backend, BackendCapabilities, LeaseRecord } from '@worklease/spec'
import type { BackendHarness } from './backend-harness.js'
import { ManualClock } from './manual-clock.js'

/** A ttl that no case outlives: leases taken with it stay held for the whole case. */
export const LONG_TTL_MS = 60_000
/** A ttl that cases wait out; short enough to keep the suite fast on server clocks. */
export const SHORT_TTL_MS = 300
// Waiting out a server-clock lease needs slack for the round trip and a loaded CI machine.
const SERVER_EXPIRY_SLACK_MS = 250

let caseCounter = 0

/**
 * What a case works with: the harness, a first backend, and time control that works for both kinds
 * of clock. On client clocks time is a {@link ManualClock} per simulated process and moves only
 * through {@link CaseContext.elapse}; on server clocks `elapse` really waits.
 */
export class CaseContext {
  readonly harness: BackendHarness
  readonly backend: Backend
  readonly clock: ManualClock
  readonly #clocks: ManualClock[]
  readonly #prefix: string
  #ids = 0

  private constructor(harness: BackendHarness, backend: Backend, clock: ManualClock, prefix: string) {
    this.harness = harness
    this.backend = backend
    this.clock = clock
    this.#clocks = [clock]
    this.#prefix = prefix
  }

  static async create(harness: BackendHarness): Promise<CaseContext> {
    const clock = new ManualClock()
    const backend = await harness.open({ clock })
    caseCounter++
    return new CaseContext(harness, backend, clock, `c${caseCounter}-${process.pid}-`)
  }

  get capabilities(): BackendCapabilities {
    return this.backend.capabilities
  }

  get clientClock(): boolean {
    return this.backend.capabilities.clock === 'client'
  }

  /**
   * Opens another simulated process over the same storage. `offsetMs` sets its clock ahead (or,
   * negative, behind) the first process's clock; it then moves with {@link elapse}.
   */
  async open(offsetMs = 0): Promise<Backend> {
    const clock = new ManualClock(this.clock.now() + offsetMs)
    this.#clocks.push(clock)
    return this.harness.open({ clock })
  }

  /** Lets `ms` pass for every process: moves the manual clocks, or waits on a server clock. */
  async elapse(ms: number): Promise<void> {
    if (this.clientClock) {
      for (const clock of this.#clocks) clock.advance(ms)
    } else {
      await sleep(ms)
    }
  }

  /** Lets a lease taken with `ttlMs` expire on any clock (exactly at the boundary on client clocks). */
  async expire(ttlMs: number = SHORT_TTL_MS): Promise<void> {
    await this.elapse(this.clientClock ? ttlMs : ttlMs + SERVER_EXPIRY_SLACK_MS)
  }

  /** What every workId of this case starts with: list cases list under it to see only their own. */
  get prefix(): string {
    return this.#prefix
  }

  /** A workId no other case or run uses, so cases stay independent even on shared storage. */
  workId(label = 'w'): string {
    this.#ids++
    return `${this.#prefix}${label}-${this.#ids}`
  }

  /** The harness's `seedToken` (cases that call it declare `needsSeed` first). */
  async seedToken(workId: string, token: bigint): Promise<void> {
    await this.harness.seedToken!(workId, token)
  }

  /** The harness's `failNextCall` (cases that call it check `failsCalls` first). */
  failNextCall(skipRoundTrips?: number): void {
    if (skipRoundTrips === undefined) this.harness.failNextCall!()
    else this.harness.failNextCall!(skipRoundTrips)
  }

  roundTrips(): number | undefined {
    return this.harness.roundTrips?.()
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** A copy of `record` with some fields replaced, as a confused or malicious caller might make. */
export function forge(
  record: LeaseRecord,
  changes: Partial<Record<keyof LeaseRecord, unknown>>,
): LeaseRecord {
  return { ...record, ...changes } as LeaseRecord
}
