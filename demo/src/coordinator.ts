import type { MemoryStore } from '@worklease/memory'
import type { DemoOptions } from './options.js'
import type { StoreSpec, WorkerConfig, WorkerEvent } from './protocol.js'
import { Random } from './random.js'
import { forkWorker, inProcessWorker, type WorkerExit, type WorkerHandle } from './worker-handles.js'

export type WorkerStatus =
  | 'starting'
  | 'idle'
  | 'working'
  | 'paused'
  | 'stopping'
  | 'killed'
  | 'stopped'
  | 'exited'
  | 'failed'

export interface WorkerInfo {
  readonly name: string
  readonly handle: WorkerHandle
  holderId?: string
  status: WorkerStatus
  item?: string
  token?: bigint
  step?: number
  role?: StrikeAction
  /** The worker this one replaced (after a crash or a graceful stop). */
  replaces?: string
}

export interface ItemInfo {
  readonly id: string
  holder?: string
  token: bigint
  stepsDone: number
  /** Acquisitions after the first, i.e. how often the item changed hands. */
  handoffs: number
  unclean: number
  done: boolean
}

export type StrikeAction = 'crash' | 'pause' | 'stop'

/** The next holder of a struck worker's item, as it reported itself. */
export interface Handoff {
  worker: string
  token: bigint
  cleanHandoff: boolean
  stepsDone: number
}

/** What the coordinator did to a worker, and what followed. */
export interface Strike {
  action: StrikeAction
  worker: string
  item: string
  token: bigint
  /** The step the worker was in the middle of. */
  step: number
  at: number
  handoff?: Handoff
  /** pause: when SIGCONT was sent, and who had claimed the item downstream by then. */
  resumedAt?: number
  claimedBy?: { worker: string; token: bigint }
  /** pause: the writes the worker attempted with its old token after it was resumed. */
  lateWrites: { step: number; accepted: boolean }[]
}

export interface PlannedStrike {
  action: StrikeAction
  /** Fraction of all steps checkpointed at which the strike is armed. */
  atProgress: number
  target?: string
  strike?: Strike
}

/** A line for the log (plain output) or the live view's recent events. */
export interface LogLine {
  at: number
  text: string
  important: boolean
}

export interface RunOutcome {
  workers: WorkerInfo[]
  items: ItemInfo[]
  plan: PlannedStrike[]
  /** Worker failures (a worker that exited on an error, or a message it sent saying so). */
  failures: string[]
  timedOut: boolean
  elapsedMs: number
}

/**
 * Runs the workers and the chaos schedule: spawns them, keeps a model of who holds what from their
 * reports, kills, stops and resumes them at the planned moments, replaces the ones that left, and
 * tells everyone to finish once every item is done.
 */
export class Coordinator {
  readonly workers = new Map<string, WorkerInfo>()
  readonly items = new Map<string, ItemInfo>()
  readonly plan: PlannedStrike[]
  readonly failures: string[] = []
  readonly startedAt = performance.now()
  readonly #options: DemoOptions
  readonly #spec: StoreSpec
  readonly #memoryStore: MemoryStore | undefined
  readonly #random: Random
  readonly #onLine: (line: LogLine) => void
  #spawned = 0
  #checkpointed = 0
  #finishing = false
  #timedOut = false
  #resolveDone!: () => void
  #pauseTimer: ReturnType<typeof setInterval> | undefined

  constructor(options: {
    demo: DemoOptions
    spec: StoreSpec
    items: readonly string[]
    memoryStore?: MemoryStore
    onLine: (line: LogLine) => void
  }) {
    this.#options = options.demo
    this.#spec = options.spec
    this.#memoryStore = options.memoryStore
    this.#onLine = options.onLine
    this.#random = new Random(options.demo.seed)
    for (const id of options.items) {
      this.items.set(id, { id, token: 0n, stepsDone: 0, handoffs: 0, unclean: 0, done: false })
    }
    // The seed decides when each strike is armed (and, below, whom it hits).
    this.plan = [
      { action: 'crash', atProgress: this.#random.between(0.1, 0.25) },
      { action: 'pause', atProgress: this.#random.between(0.3, 0.45) },
      { action: 'stop', atProgress: this.#random.between(0.5, 0.65) },
    ]
  }

  /** Fraction of all steps checkpointed so far. */
  get progress(): number {
    return this.#checkpointed / (this.items.size * this.#options.steps)
  }

  elapsed(): number {
    return performance.now() - this.startedAt
  }

  async run(): Promise<RunOutcome> {
    const done = new Promise<void>((resolve) => {
      this.#resolveDone = resolve
    })
    for (let i = 0; i < this.#options.workers; i++) this.#spawn()
    const timeout = setTimeout(() => {
      this.#timedOut = true
      this.#log(`timed out after ${this.#options.timeoutMs} ms`, true)
      void this.#finish()
    }, this.#options.timeoutMs)
    await done
    clearTimeout(timeout)
    clearInterval(this.#pauseTimer)
    return {
      workers: [...this.workers.values()],
      items: [...this.items.values()],
      plan: this.plan,
      failures: this.failures,
      timedOut: this.#timedOut,
      elapsedMs: this.elapsed(),
    }
  }

  #spawn(replaces?: string): void {
    const name = `w${++this.#spawned}`
    const config: WorkerConfig = {
      name,
      store: this.#spec,
      items: [...this.items.keys()],
      done: [...this.items.values()].filter((item) => item.done).map((item) => item.id),
      steps: this.#options.steps,
      stepMs: this.#options.stepMs,
      ttlMs: this.#options.ttlMs,
      seed: (this.#options.seed + this.#spawned * 7919) >>> 0,
      fence: this.#options.fence,
    }
    const onEvent = (event: WorkerEvent) => this.#onEvent(name, event)
    const handle =
      this.#spec.backend === 'memory'
        ? inProcessWorker(config, this.#memoryStore!, onEvent)
        : forkWorker(config, onEvent)
    const info: WorkerInfo = { name, handle, status: 'starting', ...(replaces ? { replaces } : {}) }
    this.workers.set(name, info)
    this.#log(
      `${name} started${handle.pid ? ` (pid ${handle.pid})` : ''}${replaces ? `, replacing ${replaces}` : ''}`,
      false,
    )
    handle.exited.then((exit) => this.#onExit(info, exit))
  }

  #onEvent(name: string, event: WorkerEvent): void {
    const worker = this.workers.get(name)!
    switch (event.type) {
      case 'ready':
        worker.holderId = event.holderId
        if (worker.status === 'starting') worker.status = 'idle'
        break
      case 'acquired': {
        const item = this.items.get(event.item)!
        if (event.stepsDone >= this.#options.steps) {
          // It had not heard yet that the item is done (a late message): it just releases it again.
          this.#log(`${name} found ${event.item} already done (token ${event.token})`, false)
          break
        }
        if (item.token > 0n) item.handoffs++
        if (!event.cleanHandoff) item.unclean++
        item.holder = name
        item.token = event.token
        item.stepsDone = event.stepsDone
        this.#setHolding(worker, event.item, event.token, event.stepsDone)
        for (const planned of this.plan) {
          const strike = planned.strike
          if (strike && !strike.handoff && strike.item === event.item && event.token > strike.token) {
            strike.handoff = {
              worker: name,
              token: event.token,
              cleanHandoff: event.cleanHandoff,
              stepsDone: event.stepsDone,
            }
          }
        }
        const how =
          item.handoffs === 0 ? 'first lease' : event.cleanHandoff ? 'clean handoff' : 'UNCLEAN handoff'
        this.#log(
          `${name} acquired ${event.item} token ${event.token} (${how}, ${event.stepsDone}/${this.#options.steps} steps done)`,
          !event.cleanHandoff,
        )
        break
      }
      case 'claimed': {
        if (!event.accepted) {
          this.#log(`${name} claim of ${event.item} with token ${event.token} REFUSED downstream`, true)
          break
        }
        const pause = this.#strike('pause')
        if (pause && !pause.claimedBy && pause.item === event.item && event.token > pause.token) {
          pause.claimedBy = { worker: name, token: event.token }
        }
        break
      }
      case 'step':
        this.#setHolding(worker, event.item, event.token, event.step - 1)
        worker.step = event.step
        this.#maybeStrike(worker, event.item, event.token, event.step, Date.now() - event.sentAt)
        break
      case 'wrote': {
        const pause = this.#strike('pause')
        if (pause && pause.worker === name && pause.token === event.token && pause.item === event.item) {
          pause.lateWrites.push({ step: event.step, accepted: event.accepted })
        }
        if (!event.accepted) {
          this.#log(
            `${name} late write of ${event.item} step ${event.step} with token ${event.token} REJECTED by the fence`,
            true,
          )
        } else if (
          pause?.resumedAt &&
          pause.worker === name &&
          pause.item === event.item &&
          pause.token === event.token
        ) {
          this.#log(
            `${name} late write of ${event.item} step ${event.step} with token ${event.token} ACCEPTED (no fence)`,
            true,
          )
        }
        break
      }
      case 'checkpointed': {
        const item = this.items.get(event.item)!
        if (item.token === event.token) item.stepsDone = event.step
        this.#checkpointed++
        this.#log(
          `${name} ${event.item} token ${event.token} step ${event.step}/${this.#options.steps} written and checkpointed`,
          false,
        )
        this.#arm()
        break
      }
      case 'done': {
        const item = this.items.get(event.item)!
        item.done = true
        item.holder = undefined
        this.#log(`${name} finished ${event.item}`, false)
        for (const other of this.workers.values()) other.handle.send({ type: 'item-done', item: event.item })
        break
      }
      case 'lost':
        this.#log(`${name} lost ${event.item} token ${event.token} (${event.reason})`, true)
        this.#clearHolding(worker, event.item, event.token)
        break
      case 'released': {
        const item = this.items.get(event.item)!
        if (item.holder === name && item.token === event.token) item.holder = undefined
        this.#clearHolding(worker, event.item, event.token)
        if (!item.done) this.#log(`${name} released ${event.item} token ${event.token}`, true)
        break
      }
      case 'failed':
        this.failures.push(`${name}: ${event.message}`)
        this.#log(`${name} FAILED: ${event.message.split('\n')[0]}`, true)
        break
      case 'exiting':
        break
    }
    this.#checkFinished()
  }

  #setHolding(worker: WorkerInfo, item: string, token: bigint, stepsDone: number): void {
    worker.item = item
    worker.token = token
    worker.step = stepsDone
    if (worker.status === 'idle' || worker.status === 'starting') worker.status = 'working'
  }

  #clearHolding(worker: WorkerInfo, item: string, token: bigint): void {
    if (worker.item !== item || worker.token !== token) return
    worker.item = undefined
    worker.token = undefined
    worker.step = undefined
    if (worker.status === 'working') worker.status = 'idle'
  }

  #strike(action: StrikeAction): Strike | undefined {
    return this.plan.find((planned) => planned.action === action)?.strike
  }

  /** Picks a target for every strike whose moment has come (seeded, among the busy workers). */
  #arm(): void {
    for (const planned of this.plan) {
      if (planned.strike || this.progress < planned.atProgress) continue
      const current = planned.target ? this.workers.get(planned.target) : undefined
      if (current?.status === 'working') continue
      const eligible = [...this.workers.values()]
        .filter((worker) => worker.status === 'working' && !worker.role)
        .map((worker) => worker.name)
        .filter((name) => !this.plan.some((other) => other !== planned && other.target === name))
        .sort()
      if (eligible.length === 0) continue
      planned.target = this.#random.pick(eligible)
    }
  }

  /** Strikes at the start of a step, while the worker sleeps through the step's work with no I/O. */
  #maybeStrike(worker: WorkerInfo, item: string, token: bigint, step: number, ageMs: number): void {
    const planned = this.plan.find((candidate) => candidate.target === worker.name && !candidate.strike)
    if (!planned || worker.status !== 'working' || this.#finishing) return
    // On a busy machine the report can arrive late; strike only while the step's work surely goes on
    // (it takes at least 3/4 of --step-ms), so the signal lands before the write, never after it.
    if (ageMs > this.#options.stepMs / 4) return
    // A graceful stop in the last step would leave no one to hand over to: let another worker be picked.
    if (planned.action === 'stop' && step >= this.#options.steps) {
      planned.target = undefined
      return
    }
    const strike: Strike = {
      action: planned.action,
      worker: worker.name,
      item,
      token,
      step,
      at: this.elapsed(),
      lateWrites: [],
    }
    planned.strike = strike
    worker.role = planned.action
    const where = `holding ${item} token ${token} in step ${step}${this.#spec.backend === 'memory' ? ' (simulated in-process)' : ''}`
    switch (planned.action) {
      case 'crash':
        worker.handle.kill()
        worker.status = 'killed'
        this.#log(`SIGKILL ${worker.name} ${where}: its lease is left to expire`, true)
        // A supervisor restarts crashed workers.
        this.#spawn(worker.name)
        break
      case 'pause':
        worker.handle.stop()
        worker.status = 'paused'
        this.#log(`SIGSTOP ${worker.name} ${where}: it will sleep past its ttl`, true)
        this.#pauseTimer = setInterval(() => this.#maybeResume(worker, strike), 20)
        break
      case 'stop':
        worker.handle.terminate()
        worker.status = 'stopping'
        this.#log(`SIGTERM ${worker.name} ${where}: it finishes the step, releases, exits`, true)
        break
    }
  }

  /** Resumes the paused worker once its ttl has passed and a successor has claimed its item downstream. */
  #maybeResume(worker: WorkerInfo, strike: Strike): void {
    const pausedFor = this.elapsed() - strike.at
    const takenOver = strike.claimedBy !== undefined || this.items.get(strike.item)!.done
    // Bounded, in case no one takes over (then the audit says so).
    if (!(pausedFor >= this.#options.ttlMs && takenOver) && pausedFor < 4 * this.#options.ttlMs + 10_000)
      return
    clearInterval(this.#pauseTimer)
    this.#pauseTimer = undefined
    strike.resumedAt = this.elapsed()
    worker.status = 'working'
    const by = strike.claimedBy
      ? `${strike.claimedBy.worker} holds token ${strike.claimedBy.token}`
      : 'no one took over'
    this.#log(
      `SIGCONT ${worker.name} after ${(pausedFor / 1000).toFixed(1)} s (${by}); it still thinks it holds token ${strike.token}`,
      true,
    )
    worker.handle.resume()
  }

  #onExit(worker: WorkerInfo, exit: WorkerExit): void {
    if (worker.status === 'killed') {
      this.#checkFinished()
      return
    }
    const expected = worker.status === 'stopping' || this.#finishing
    if (worker.status === 'stopping') {
      worker.status = 'stopped'
      this.#log(`${worker.name} stopped gracefully`, true)
      if (!this.#finishing) this.#spawn(worker.name)
    } else if (exit.code === 0 && expected) {
      worker.status = 'exited'
    } else {
      worker.status = 'failed'
      const why = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`
      this.failures.push(
        `${worker.name} exited unexpectedly (${why})${exit.stderr ? `:\n${exit.stderr}` : ''}`,
      )
      this.#log(`${worker.name} exited unexpectedly (${why})`, true)
      if (!this.#finishing) this.#spawn(worker.name)
    }
    worker.item = undefined
    worker.token = undefined
    worker.step = undefined
    this.#checkFinished()
  }

  #checkFinished(): void {
    if (this.#finishing) return
    if (![...this.items.values()].every((item) => item.done)) return
    const pause = this.#strike('pause')
    // Let the resumed worker make its late write before everyone is told to leave.
    if (pause && (pause.resumedAt === undefined || pause.lateWrites.length === 0)) {
      if (pause.resumedAt === undefined || this.elapsed() - pause.resumedAt < 2_000) {
        setTimeout(() => this.#checkFinished(), 100)
        return
      }
    }
    void this.#finish()
  }

  async #finish(): Promise<void> {
    if (this.#finishing) return
    this.#finishing = true
    clearInterval(this.#pauseTimer)
    const live = [...this.workers.values()].filter(
      (w) => !['killed', 'stopped', 'exited', 'failed'].includes(w.status),
    )
    this.#log(
      this.#timedOut ? 'stopping every worker' : 'every item is done: telling the workers to finish',
      false,
    )
    for (const worker of live) {
      if (worker.status === 'paused') worker.handle.resume()
      worker.handle.send({ type: 'finish' })
    }
    const exits = Promise.all(live.map((worker) => worker.handle.exited))
    const grace = new Promise((resolve) => setTimeout(resolve, this.#options.ttlMs + 5_000))
    await Promise.race([exits, grace])
    for (const worker of live) {
      if (worker.status !== 'exited' && worker.status !== 'failed' && worker.status !== 'stopped') {
        worker.handle.kill()
      }
    }
    this.#resolveDone()
  }

  #log(text: string, important: boolean): void {
    this.#onLine({ at: this.elapsed(), text, important })
  }
}
