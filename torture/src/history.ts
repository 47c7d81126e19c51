import { closeSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { isWorkleaseError, LeaseHeldError } from '@worklease/spec'
import { monotonicNow, readHostClocks } from './host-clock.js'

const REFUSALS: ReadonlySet<string> = new Set(['LEASE_HELD', 'FENCED', 'LEASE_EXPIRED'])

/** The five backend operations, as the history names them. */
export type OpName = 'acquire' | 'checkpoint' | 'renew' | 'release' | 'readCheckpoint'

/**
 * `ok`: the call returned. `fail`: it threw a worklease error (LEASE_HELD, FENCED, LEASE_EXPIRED), which
 * the contract says changed nothing. `info`: indeterminate: a store error, a timeout, or the process
 * died before the reply; the operation may or may not have taken effect, at any time after invocation.
 */
export type Outcome = 'ok' | 'fail' | 'info'

/** One operation of one worker, as the checker sees it. Times are ms on the host's monotonic clock. */
export interface Op {
  readonly id: string
  /** Worker process incarnation, e.g. `p2.1` (slot 2, second incarnation). */
  readonly process: string
  readonly holder: string
  readonly op: OpName
  readonly workId: string
  /** The record's token for ops on a record; the token acquired for an ok acquire. */
  readonly token: bigint | null
  readonly ttl: number | null
  /** Checkpoint: the (unique) value written. */
  readonly value: string | null
  readonly invoke: number
  /** `Infinity` when the completion is unknown (process killed, reply never seen). */
  readonly complete: number
  readonly outcome: Outcome
  /** The worklease error code for `fail`, the error message for `info`. */
  readonly code: string | null
  /** readCheckpoint, and an acquire that read (acquireWithCheckpoint): the state read (null: none). */
  readonly read: string | null
  readonly clean: boolean | null
  /**
   * A LEASE_HELD answer's lease in the way, where the driver named it: the token it reported and how
   * long that lease had left. Kept so a report can say which lease refused the call.
   */
  readonly heldBy: { readonly token: bigint; readonly holder: string; readonly expiresInMs: number } | null
  /** The injected clock offset (client-clock backends) at invocation and completion. */
  readonly offsetAtInvoke: number
  readonly offsetAtComplete: number
}

interface InvokeLine {
  e: 'i'
  id: string
  p: string
  h: string
  op: OpName
  w: string
  tok?: string
  ttl?: number
  v?: string
  t: number
  off: number
  /** How far the host's wall clock has moved since the run's reference, at `t` (host-clock.ts). */
  d?: number
}

interface CompleteLine {
  e: 'c'
  id: string
  t: number
  off: number
  d?: number
  o: Outcome
  code?: string
  tok?: string
  r?: string | null
  clean?: boolean
  /** LEASE_HELD: the token, holder and time left of the lease the driver named. */
  held?: { tok: string; h: string; in: number }
}

/** A read of the checkpoint that returned: a readCheckpoint, or an acquire that read (acquireWithCheckpoint). */
export const isRead = (op: Op): boolean =>
  op.outcome === 'ok' && op.clean !== null && (op.op === 'readCheckpoint' || op.op === 'acquire')

/**
 * Appends a process's history to a file with synchronous writes, so an invocation is on disk before
 * the call starts and survives a SIGKILL (an op whose invocation was lost could have effects the
 * checker cannot explain).
 */
export class HistoryWriter {
  readonly #fd: number
  readonly #process: string
  readonly #clockReference: number | undefined
  #next = 0

  /**
   * `clockReference`: the run's `hostClockReference` (host-clock.ts), taken once by the coordinator; with it,
   * each line records how far the host's wall clock has moved since. Without it, none is recorded.
   */
  constructor(path: string, process: string, clockReference?: number) {
    this.#fd = openSync(path, 'a')
    this.#process = process
    this.#clockReference = clockReference
  }

  /** `t` and, with a reference, `d` for a line written now. */
  #stamp(): { t: number; d?: number } {
    if (this.#clockReference === undefined) return { t: monotonicNow() }
    const { monotonic, lead } = readHostClocks()
    return { t: monotonic, d: Math.round((lead - this.#clockReference) * 100) / 100 }
  }

  invoke(
    fields: { holder: string; op: OpName; workId: string; token?: bigint; ttl?: number; value?: string },
    offset: number,
  ): string {
    const id = `${this.#process}:${this.#next++}`
    const line: InvokeLine = {
      e: 'i',
      id,
      p: this.#process,
      h: fields.holder,
      op: fields.op,
      w: fields.workId,
      ...this.#stamp(),
      off: offset,
    }
    if (fields.token !== undefined) line.tok = fields.token.toString()
    if (fields.ttl !== undefined) line.ttl = fields.ttl
    if (fields.value !== undefined) line.v = fields.value
    writeSync(this.#fd, `${JSON.stringify(line)}\n`)
    return id
  }

  complete(
    id: string,
    outcome: Outcome,
    offset: number,
    extra: {
      code?: string
      token?: bigint
      read?: string | null
      clean?: boolean
      held?: CompleteLine['held']
    } = {},
  ): void {
    const line: CompleteLine = { e: 'c', id, ...this.#stamp(), off: offset, o: outcome }
    if (extra.code !== undefined) line.code = extra.code.slice(0, 200)
    if (extra.token !== undefined) line.tok = extra.token.toString()
    if (extra.read !== undefined) line.r = extra.read
    if (extra.clean !== undefined) line.clean = extra.clean
    if (extra.held !== undefined) line.held = extra.held
    writeSync(this.#fd, `${JSON.stringify(line)}\n`)
  }

  /**
   * Completes a call that threw: `fail` for the contract's refusals, which changed nothing, and
   * `info` for anything else (a store error, a timeout, an abandoned call), which may have landed.
   */
  threw(id: string, error: unknown, offset: number): void {
    if (isWorkleaseError(error) && REFUSALS.has(error.code)) {
      const holder = error instanceof LeaseHeldError ? error.holder : undefined
      this.complete(id, 'fail', offset, {
        code: error.code,
        ...(holder && {
          held: { tok: holder.fencingToken.toString(), h: holder.holderId, in: holder.expiresInMs },
        }),
      })
    } else {
      const code = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
      this.complete(id, 'info', offset, { code })
    }
  }

  close(): void {
    closeSync(this.#fd)
  }
}

/**
 * Reads every `*.jsonl` history in `dir` into ops; an invocation without completion is `info`. An op's
 * clock offsets are its process's injected one plus the host wall clock's move (`d`) where the lines
 * record it: at invocation and completion for an op that returned; for one whose outcome is unknown,
 * which may have landed (and read a server's clock) at any later time, the least move from its
 * invocation on.
 */
export function loadHistory(dir: string): Op[] {
  const invokes = new Map<string, InvokeLine>()
  const completes = new Map<string, CompleteLine>()
  // A history the checker cannot read as written is said, never judged in part: a dropped line may be
  // the one op that breaks the contract.
  const damaged = (file: string, index: number, why: string) =>
    new Error(`history damaged: ${join(dir, file)} line ${index + 1}: ${why}`)
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.jsonl'))) {
    const lines = readFileSync(join(dir, file), 'utf8').split('\n')
    const last = lines.findLastIndex((text) => text !== '')
    for (const [index, text] of lines.entries()) {
      if (!text) continue
      let line: InvokeLine | CompleteLine
      try {
        line = JSON.parse(text)
      } catch {
        // A line torn by SIGKILL mid-write is its process's last: its op never started (invocations
        // are written first) or its reply is unknown. Torn anywhere else, lines were lost.
        if (index === last) continue
        throw damaged(file, index, 'not JSON, and not the last line (a tear is only ever the last)')
      }
      const seen = line.e === 'i' ? invokes : completes
      if (seen.has(line.id))
        throw damaged(file, index, `a second ${line.e === 'i' ? 'invocation' : 'completion'} of ${line.id}`)
      if (line.e === 'i') invokes.set(line.id, line)
      else {
        if (line.r !== undefined && typeof line.clean !== 'boolean') {
          // Recorded as it came: a driver's read that gave no boolean cleanHandoff (JSON drops undefined).
          throw damaged(file, index, `${line.id} read a checkpoint with no boolean cleanHandoff`)
        }
        completes.set(line.id, line)
      }
    }
  }
  for (const id of completes.keys()) {
    if (!invokes.has(id))
      throw new Error(`history damaged: ${dir}: ${id} completed, but its invocation is missing`)
  }
  const leastMoveFrom = leastClockMoveFrom([...invokes.values(), ...completes.values()])
  const ops: Op[] = []
  for (const inv of invokes.values()) {
    const done = completes.get(inv.id)
    const token = inv.tok !== undefined ? BigInt(inv.tok) : done?.tok !== undefined ? BigInt(done.tok) : null
    const returned = done !== undefined && done.o !== 'info'
    ops.push({
      id: inv.id,
      process: inv.p,
      holder: inv.h,
      op: inv.op,
      workId: inv.w,
      token,
      ttl: inv.ttl ?? null,
      value: inv.v ?? null,
      invoke: inv.t,
      complete: returned ? done.t : Number.POSITIVE_INFINITY,
      outcome: done?.o ?? 'info',
      code: done?.code ?? (done ? null : 'no completion (process killed or stopped)'),
      read: done?.r ?? null,
      clean: done?.clean ?? null,
      heldBy: done?.held
        ? { token: BigInt(done.held.tok), holder: done.held.h, expiresInMs: done.held.in }
        : null,
      offsetAtInvoke: inv.off + (inv.d ?? 0),
      offsetAtComplete: returned
        ? done.off + (done.d ?? 0)
        : (done?.off ?? inv.off) + Math.min(inv.d ?? 0, leastMoveFrom(inv.t)),
    })
  }
  return ops.sort((a, b) => a.invoke - b.invoke)
}

/** For a time `t`, the least wall-clock move (`d`) any line records at or after it; Infinity where none does. */
function leastClockMoveFrom(lines: readonly { t: number; d?: number }[]): (t: number) => number {
  const samples = lines.filter((line) => line.d !== undefined).sort((x, y) => x.t - y.t)
  const least = samples.map((sample) => sample.d!)
  for (let i = least.length - 2; i >= 0; i--) least[i] = Math.min(least[i]!, least[i + 1]!)
  return (t) => {
    let lo = 0
    let hi = samples.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (samples[mid]!.t < t) lo = mid + 1
      else hi = mid
    }
    return lo === samples.length ? Number.POSITIVE_INFINITY : least[lo]!
  }
}
