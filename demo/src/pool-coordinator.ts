import { fork } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { type LogLine, within } from './coordinator.js'
import { initialPoolState } from './initial-pool-state.js'
import type { DemoOptions } from './options.js'
import type { PoolCoordinatorMessage, PoolWorkerConfig, PoolWorkerEvent } from './pool-protocol.js'
import type { StoreSpec } from './protocol.js'
import { type PoolAction, type PoolState, reducePool } from './reduce-pool.js'

/** A change the coordinator makes to the fleet once that fraction of all steps is checkpointed. */
export interface PoolChange {
  readonly action: 'join' | 'leave' | 'crash'
  readonly atProgress: number
  /** Workers it struck or started, and when (ms since the start). */
  workers?: string[]
  at?: number
}

export interface PoolRunOutcome {
  readonly state: PoolState
  readonly changes: readonly PoolChange[]
  readonly timedOut: boolean
  readonly elapsedMs: number
}

interface Child {
  readonly name: string
  /** Sends the worker its configuration: it opens the stores and joins the pool. */
  start(): void
  send(message: PoolCoordinatorMessage): void
  signal(signal: 'SIGTERM' | 'SIGKILL'): void
  readonly exited: Promise<void>
}

const WORKER_SCRIPT = new URL('./pool-worker-process.ts', import.meta.url)
const now = () => performance.timeOrigin + performance.now()

/**
 * `pnpm demo --pool`: worker processes form a LeasePool over the items; midway two more join, one
 * leaves cleanly (SIGTERM: its items are handed over by consent) and one crashes (SIGKILL: its items
 * are taken after the ttl). The state changes are {@link reducePool}'s; this class does the I/O.
 */
export class PoolCoordinator {
  state: PoolState
  readonly changes: PoolChange[]
  readonly startedAt = performance.now()
  readonly #options: DemoOptions
  readonly #spec: StoreSpec
  readonly #onLine: (line: LogLine) => void
  readonly #children = new Map<string, Child>()
  #spawned = 0
  /** Joiners are forked at the start and wait for their 'start': a process takes seconds to boot. */
  readonly #standby: string[] = []
  #finishing = false
  #timedOut = false
  #resolveDone!: () => void

  constructor(options: {
    demo: DemoOptions
    spec: StoreSpec
    items: readonly string[]
    onLine: (line: LogLine) => void
  }) {
    this.#options = options.demo
    this.#spec = options.spec
    this.#onLine = options.onLine
    this.state = initialPoolState(options.items, options.demo.steps)
    this.changes = [
      { action: 'join', atProgress: 0.15 },
      { action: 'leave', atProgress: 0.35 },
      { action: 'crash', atProgress: 0.55 },
    ]
  }

  get progress(): number {
    return this.state.checkpointed / (Object.keys(this.state.items).length * this.#options.steps)
  }

  elapsed(): number {
    return performance.now() - this.startedAt
  }

  /** Every worker still running (for Ctrl-C). */
  killAll(): void {
    for (const child of this.#children.values()) child.signal('SIGKILL')
  }

  async run(): Promise<PoolRunOutcome> {
    const done = new Promise<void>((resolve) => {
      this.#resolveDone = resolve
    })
    for (let i = 0; i < this.#options.workers; i++) this.#start(this.#fork())
    this.#standby.push(this.#fork(), this.#fork())
    const timeout = setTimeout(() => {
      this.#timedOut = true
      this.#log({ text: `timed out after ${this.#options.timeoutMs} ms`, important: true })
      void this.#finish()
    }, this.#options.timeoutMs)
    await done
    clearTimeout(timeout)
    return { state: this.state, changes: this.changes, timedOut: this.#timedOut, elapsedMs: this.elapsed() }
  }

  #dispatch(action: PoolAction): void {
    const { state, lines } = reducePool(this.state, action)
    this.state = state
    for (const line of lines) this.#log(line)
  }

  #start(name: string, role?: 'joined'): string {
    this.#dispatch({ type: 'spawned', worker: name, ...(role ? { role } : {}) })
    this.#children.get(name)?.start()
    return name
  }

  #fork(): string {
    const name = `w${++this.#spawned}`
    const config: PoolWorkerConfig = {
      name,
      store: this.#spec,
      items: Object.keys(this.state.items),
      steps: this.#options.steps,
      stepMs: this.#options.stepMs,
      ttlMs: this.#options.ttlMs,
      seed: (this.#options.seed + this.#spawned * 7919) >>> 0,
      fence: this.#options.fence,
    }
    const child = fork(WORKER_SCRIPT, [], {
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    })
    let stderr = ''
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4096)
    })
    child.on('error', () => undefined)
    child.on('message', (event: PoolWorkerEvent) => this.#onReport(name, event))
    const exited = new Promise<void>((resolve) =>
      child.once('exit', (code, signal) => {
        this.#dispatch({ type: 'exited', worker: name, code, signal, expected: this.#finishing, stderr })
        this.#children.delete(name)
        resolve()
        this.#checkFinished()
      }),
    )
    this.#children.set(name, {
      name,
      start: () => child.send({ type: 'start', config } satisfies PoolCoordinatorMessage),
      send: (message) => {
        if (child.connected) child.send(message, () => undefined)
      },
      signal: (signal) => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      },
      exited,
    })
    return name
  }

  #onReport(name: string, event: PoolWorkerEvent): void {
    this.#dispatch({ type: 'report', worker: name, event })
    if (event.type === 'checkpointed') this.#maybeChange()
    this.#checkFinished()
  }

  /** Makes the next planned change once its moment has come. */
  #maybeChange(): void {
    if (this.#finishing) return
    const next = this.changes.find((change) => change.at === undefined)
    if (!next || this.progress < next.atProgress) return
    const busiest = Object.values(this.state.workers)
      .filter((worker) => worker.status === 'running' && !worker.role && worker.items.length > 0)
      .sort((a, b) => b.items.length - a.items.length || (a.name < b.name ? -1 : 1))
    switch (next.action) {
      case 'join':
        next.workers = this.#standby.splice(0).map((name) => this.#start(name, 'joined'))
        break
      case 'leave':
      case 'crash': {
        const target = busiest[0]
        if (!target) return
        const signal = next.action === 'leave' ? 'SIGTERM' : 'SIGKILL'
        this.#children.get(target.name)?.signal(signal)
        this.#dispatch({ type: 'signalled', worker: target.name, signal, at: now() })
        next.workers = [target.name]
        break
      }
    }
    next.at = this.elapsed()
  }

  #checkFinished(): void {
    if (this.#finishing) return
    if (!Object.values(this.state.items).every((item) => item.done)) return
    void this.#finish()
  }

  async #finish(): Promise<void> {
    if (this.#finishing) return
    this.#finishing = true
    this.#log({
      text: this.#timedOut ? 'stopping every worker' : 'every item is done: the workers leave the pool',
      important: false,
    })
    const live = [...this.#children.values()]
    for (const child of live) child.send({ type: 'finish' })
    const graceMs = this.#options.ttlMs + 5_000
    await within(Promise.all(live.map((child) => child.exited)), graceMs)
    // A child leaves #children when its exit is reported: the ones left hung.
    const hung = live.filter((child) => this.#children.has(child.name))
    for (const child of hung) {
      // Recorded before the kill, so the outcome run() returns has it whenever the exit report lands.
      this.#dispatch({ type: 'forceKilled', worker: child.name, graceMs })
      child.signal('SIGKILL')
    }
    // SIGKILL is not refused: wait for those exits (bounded) so no worker outlives the run.
    await within(Promise.all(hung.map((child) => child.exited)), 5_000)
    this.#resolveDone()
  }

  #log(line: { text: string; important: boolean }): void {
    this.#onLine({ at: this.elapsed(), ...line })
  }
}
