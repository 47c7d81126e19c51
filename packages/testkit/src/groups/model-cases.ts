import type { Backend, LeaseRecord } from '@worklease/spec'
import { isWorkleaseError } from '@worklease/spec'
import fc from 'fast-check'
import { ContractViolation, checkBytes, checkEqual, show } from '../assertions.js'
import { type CaseContext, LONG_TTL_MS } from '../case-context.js'
import { type ModelOutcome, ReferenceModel } from '../reference-model.js'
import type { CaseDefinition } from '../suite-case.js'

const HOLDERS = ['holder-a', 'holder-b'] as const
const WORK_SLOTS = 2
const RUNS = Number(process.env.WORKLEASE_MODEL_RUNS ?? 25)
const MAX_COMMANDS = 40

interface Model {
  readonly reference: ReferenceModel
  /** Which holder/work pairs have a record, stale or not (the real side keeps the records). */
  readonly known: Set<string>
  /** Whether the backend has renewMany (capabilities.renewMany). */
  readonly renewMany: boolean
  /** Whether the backend has acquireWithCheckpoint (capabilities.acquireWithCheckpoint). */
  readonly acquireWithCheckpoint: boolean
  /** Whether the backend has revoke (capabilities.revoke). */
  readonly revoke: boolean
}

interface Real {
  readonly context: CaseContext
  readonly backend: Backend
  readonly workIds: readonly string[]
  readonly records: Map<string, LeaseRecord>
}

const key = (holder: number, slot: number) => `${holder}/${slot}`
const now = (r: Real) => (r.context.clientClock ? r.context.clock.now() : Date.now())

async function actual<T>(action: () => Promise<T>): Promise<ModelOutcome<T>> {
  try {
    return { ok: true, value: await action() }
  } catch (error) {
    if (isWorkleaseError(error)) return { ok: false, code: error.code }
    throw error
  }
}

function compare(what: string, got: ModelOutcome<unknown>, want: ModelOutcome<unknown>): void {
  const show = (o: ModelOutcome<unknown>) => (o.ok ? 'success' : o.code)
  if (got.ok !== want.ok || (!got.ok && !want.ok && got.code !== want.code)) {
    throw new ContractViolation(
      `${what}: the reference model says ${show(want)}, the backend said ${show(got)}`,
    )
  }
}

/**
 * A live AbortSignal for a call that is given one, or nothing: drivers often take another path with a
 * signal (a client option, a listener), and that path must keep the contract too.
 */
function callOptions(signal: boolean): { signal?: AbortSignal } {
  return signal ? { signal: new AbortController().signal } : {}
}

const withSignal = (signal: boolean) => (signal ? ', signal' : '')

abstract class RecordCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly holder: number,
    readonly slot: number,
    readonly signal: boolean,
  ) {}
  check(m: Readonly<Model>): boolean {
    return m.known.has(key(this.holder, this.slot))
  }
  abstract run(m: Model, r: Real): Promise<void>
  abstract toString(): string
  protected record(r: Real): LeaseRecord {
    return r.records.get(key(this.holder, this.slot))!
  }
}

/** An acquire, or (where the backend has it) an acquireWithCheckpoint, whose read is checked too. */
class Acquire implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly holder: number,
    readonly slot: number,
    readonly ttlMs: number,
    readonly withCheckpoint: boolean,
    readonly signal: boolean,
  ) {}
  check(m: Readonly<Model>): boolean {
    return !this.withCheckpoint || m.acquireWithCheckpoint
  }
  async run(m: Model, r: Real): Promise<void> {
    const workId = r.workIds[this.slot]!
    const holderId = HOLDERS[this.holder]!
    const at = now(r)
    const got = await actual(async () =>
      this.withCheckpoint
        ? await r.backend.acquireWithCheckpoint!(workId, holderId, this.ttlMs, callOptions(this.signal))
        : {
            record: await r.backend.acquire(workId, holderId, this.ttlMs, callOptions(this.signal)),
            checkpoint: undefined,
          },
    )
    const want = m.reference.acquire(workId, holderId, this.ttlMs, at)
    compare(this.toString(), got, want)
    if (got.ok && want.ok) {
      const { record, checkpoint } = got.value
      checkEqual(record.fencingToken, want.value.token, `${this} token`)
      checkEqual(record.holderId, holderId, `${this} holderId`)
      if (r.context.clientClock)
        checkEqual(record.expiresAt.getTime(), want.value.expiresAt, `${this} expiresAt`)
      if (checkpoint) {
        checkBytes(checkpoint.state, want.value.checkpoint.state, `${this} state`)
        checkEqual(checkpoint.cleanHandoff, want.value.checkpoint.cleanHandoff, `${this} cleanHandoff`)
      }
      r.records.set(key(this.holder, this.slot), record)
      m.known.add(key(this.holder, this.slot))
    }
  }
  toString(): string {
    const name = this.withCheckpoint ? 'acquireWithCheckpoint' : 'acquire'
    return `${name}(w${this.slot}, ${HOLDERS[this.holder]}, ${this.ttlMs}${withSignal(this.signal)})`
  }
}

class Renew extends RecordCommand {
  constructor(
    holder: number,
    slot: number,
    signal: boolean,
    readonly ttlMs: number,
  ) {
    super(holder, slot, signal)
  }
  async run(m: Model, r: Real): Promise<void> {
    const record = this.record(r)
    const at = now(r)
    compare(
      `${this}`,
      await actual(() => r.backend.renew(record, this.ttlMs, callOptions(this.signal))),
      m.reference.renew(record, this.ttlMs, at),
    )
  }
  toString(): string {
    return `renew(w${this.slot}, ${HOLDERS[this.holder]}, ${this.ttlMs}${withSignal(this.signal)})`
  }
}

class Checkpoint extends RecordCommand {
  constructor(
    holder: number,
    slot: number,
    signal: boolean,
    readonly ttlMs: number,
    readonly state: Uint8Array,
    readonly sequence: number,
  ) {
    super(holder, slot, signal)
  }
  async run(m: Model, r: Real): Promise<void> {
    const record = this.record(r)
    const at = now(r)
    const { sequence } = this
    compare(
      `${this}`,
      await actual(() =>
        r.backend.checkpoint(record, this.state, this.ttlMs, { sequence, ...callOptions(this.signal) }),
      ),
      m.reference.checkpoint(record, this.state, this.ttlMs, at, sequence),
    )
  }
  toString(): string {
    return `checkpoint(w${this.slot}, ${HOLDERS[this.holder]}, ${this.ttlMs}, [${this.state.join(',')}], seq ${this.sequence}${withSignal(this.signal)})`
  }
}

class Release extends RecordCommand {
  async run(m: Model, r: Real): Promise<void> {
    const record = this.record(r)
    const at = now(r)
    compare(
      `${this}`,
      await actual(() => r.backend.release(record, callOptions(this.signal))),
      m.reference.release(record, at),
    )
  }
  toString(): string {
    return `release(w${this.slot}, ${HOLDERS[this.holder]}${withSignal(this.signal)})`
  }
}

class Read extends RecordCommand {
  async run(m: Model, r: Real): Promise<void> {
    const record = this.record(r)
    const got = await actual(() => r.backend.readCheckpoint(record, callOptions(this.signal)))
    const want = m.reference.readCheckpoint(record)
    compare(`${this}`, got, want)
    if (got.ok && want.ok) {
      checkBytes(got.value.state, want.value.state, `${this} state`)
      checkEqual(got.value.cleanHandoff, want.value.cleanHandoff, `${this} cleanHandoff`)
    }
  }
  toString(): string {
    return `readCheckpoint(w${this.slot}, ${HOLDERS[this.holder]}${withSignal(this.signal)})`
  }
}

/** Renews every record the holder has, stale or not, in one renewMany call. */
class RenewMany implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly holder: number,
    readonly ttlMs: number,
    readonly signal: boolean,
  ) {}
  check(m: Readonly<Model>): boolean {
    return (
      m.renewMany &&
      Array.from({ length: WORK_SLOTS }, (_, s) => s).some((s) => m.known.has(key(this.holder, s)))
    )
  }
  async run(m: Model, r: Real): Promise<void> {
    const records = [...Array(WORK_SLOTS).keys()]
      .filter((slot) => m.known.has(key(this.holder, slot)))
      .map((slot) => r.records.get(key(this.holder, slot))!)
    const at = now(r)
    const got = await r.backend.renewMany!(records, this.ttlMs, callOptions(this.signal))
    const want = m.reference.renewMany(records, this.ttlMs, at)
    checkEqual(show(got), show(want), `${this}`)
  }
  toString(): string {
    return `renewMany(${HOLDERS[this.holder]}, ${this.ttlMs}${withSignal(this.signal)})`
  }
}

/**
 * An operator's revoke of a workId: of whoever holds it, or of the tenure of a token taken from a
 * holder's record (possibly stale), one below or one above it.
 */
class Revoke implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly slot: number,
    readonly named: { readonly holder: number; readonly offset: -1 | 0 | 1 } | null,
    readonly signal: boolean,
  ) {}
  check(m: Readonly<Model>): boolean {
    return m.revoke
  }
  async run(m: Model, r: Real): Promise<void> {
    const workId = r.workIds[this.slot]!
    const fencingToken = this.#token(r)
    const at = now(r)
    const options = { ...(fencingToken === undefined ? {} : { fencingToken }), ...callOptions(this.signal) }
    const got = await r.backend.revoke!(workId, options)
    checkEqual(got, m.reference.revoke(workId, fencingToken, at), `${this}`)
  }
  #token(r: Real): bigint | undefined {
    if (!this.named) return undefined
    const seen = r.records.get(key(this.named.holder, this.slot))?.fencingToken ?? 1n
    const token = seen + BigInt(this.named.offset)
    return token < 1n ? 1n : token
  }
  toString(): string {
    if (!this.named) return `revoke(w${this.slot}${withSignal(this.signal)})`
    const { holder, offset } = this.named
    return `revoke(w${this.slot}, token of ${HOLDERS[holder]}${offset === 0 ? '' : offset > 0 ? ' + 1' : ' - 1'}${withSignal(this.signal)})`
  }
}

class Elapse implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check(): boolean {
    return true
  }
  async run(_m: Model, r: Real): Promise<void> {
    await r.context.elapse(this.ms)
  }
  toString(): string {
    return `elapse(${this.ms})`
  }
}

function commands(clientClock: boolean) {
  const holder = fc.integer({ min: 0, max: HOLDERS.length - 1 })
  const slot = fc.integer({ min: 0, max: WORK_SLOTS - 1 })
  // Without a controllable clock nothing may expire mid-run, or the model and the server would
  // disagree about "now"; releases still free leases.
  const ttl = clientClock ? fc.constantFrom(100, 1_000, LONG_TTL_MS) : fc.constant(LONG_TTL_MS)
  const state = fc.uint8Array({ maxLength: 8 })
  // Few values, so that equal and lower sequences (a retry, a late-landing earlier checkpoint) are common.
  const sequence = fc.integer({ min: 1, max: 6 })
  // A live signal on some calls: a driver's path with one must keep the contract as well.
  const signal = fc.boolean()
  const all: Array<fc.Arbitrary<fc.AsyncCommand<Model, Real>>> = [
    fc.tuple(holder, slot, ttl, fc.boolean(), signal).map(([h, s, t, w, g]) => new Acquire(h, s, t, w, g)),
    fc.tuple(holder, slot, signal, ttl).map(([h, s, g, t]) => new Renew(h, s, g, t)),
    fc
      .tuple(holder, slot, signal, ttl, state, sequence)
      .map(([h, s, g, t, b, q]) => new Checkpoint(h, s, g, t, b, q)),
    fc.tuple(holder, slot, signal).map(([h, s, g]) => new Release(h, s, g)),
    fc.tuple(holder, slot, signal).map(([h, s, g]) => new Read(h, s, g)),
    fc.tuple(holder, ttl, signal).map(([h, t, g]) => new RenewMany(h, t, g)),
    fc
      .tuple(
        slot,
        fc.option(fc.record({ holder, offset: fc.constantFrom(-1 as const, 0 as const, 1 as const) })),
        signal,
      )
      .map(([s, named, g]) => new Revoke(s, named, g)),
  ]
  if (clientClock) all.push(fc.constantFrom(1, 99, 100, 500, 1_000).map((ms) => new Elapse(ms)))
  return fc.commands(all, { maxCommands: MAX_COMMANDS, size: 'max' })
}

export const modelCases: CaseDefinition[] = [
  {
    name: `random histories of ${HOLDERS.length} holders on ${WORK_SLOTS} workIds agree with the reference model`,
    timeoutMs: 120_000,
    async run(c) {
      const seedText = process.env.WORKLEASE_MODEL_SEED
      const property = fc.asyncProperty(commands(c.clientClock), async (cmds) => {
        const workIds = Array.from({ length: WORK_SLOTS }, () => c.workId('model'))
        const setup = () => ({
          model: {
            reference: new ReferenceModel(),
            known: new Set<string>(),
            renewMany: c.capabilities.renewMany !== undefined,
            acquireWithCheckpoint: c.capabilities.acquireWithCheckpoint === true,
            revoke: c.capabilities.revoke === true,
          },
          real: { context: c, backend: c.backend, workIds, records: new Map<string, LeaseRecord>() },
        })
        await fc.asyncModelRun(setup, cmds)
      })
      const details = await fc.check(property, {
        numRuns: RUNS,
        ...(seedText ? { seed: Number(seedText), path: process.env.WORKLEASE_MODEL_PATH } : {}),
      })
      if (details.failed) {
        const failure = details.errorInstance
        throw new ContractViolation(
          `model-based run failed: ${failure instanceof Error ? failure.message : show(failure)}\n` +
            `counterexample: ${fc.stringify(details.counterexample)}\n` +
            `replay with WORKLEASE_MODEL_SEED=${details.seed} WORKLEASE_MODEL_PATH=${details.counterexamplePath}`,
          { cause: failure },
        )
      }
    },
  },
]
