import type { MemoryStore } from '@worklease/memory'
import type { DemoOptions } from './options.js'
import type { StoreSpec, WorkerConfig } from './protocol.js'
import { Random } from './random.js'
import {
  armStrikes,
  type ItemState,
  initialRunState,
  liveWorkers,
  type PlannedStrike,
  progressOf,
  type RunAction,
  type RunEffect,
  type RunState,
  readyToFinish,
  reduceRun,
  type WorkerState,
} from './reduce-run.js'
import { forkWorker, inProcessWorker, type WorkerHandle } from './worker-handles.js'

/** Waits for `promise`, or `ms` at most. */
export async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms)
  })
  await Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** A line for the log (plain output) or the live view's recent events. */
export interface LogLine {
  at: number
  text: string
  important: boolean
}

export interface RunOutcome {
  workers: WorkerState[]
  items: ItemState[]
  plan: readonly PlannedStrike[]
  /** Worker failures (a worker that exited on an error, or a message it sent saying so). */
  failures: readonly string[]
  timedOut: boolean
  elapsedMs: number
}

/**
 * Runs the workers and the chaos schedule: spawns them, kills, stops and resumes them at the planned
 * moments, replaces the ones that left, and tells everyone to finish once every item is done. Who holds
 * what, and when to strike, is {@link reduceRun}'s; this class does the I/O.
 */
export class Coordinator {
  state: RunState
  readonly startedAt = performance.now()
  readonly #options: DemoOptions
  readonly #spec: StoreSpec
  readonly #memoryStore: MemoryStore | undefined
  readonly #random: Random
  readonly #onLine: (line: LogLine) => void
  readonly #handles = new Map<string, WorkerHandle>()
  #spawned = 0
  #timedOut = false
  #resolveDone!: () => void
  #ticker: ReturnType<typeof setInterval> | undefined

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
    // The seed decides when each strike is armed (and, in armStrikes, whom it hits).
    const plan: PlannedStrike[] = [
      { action: 'crash', atProgress: this.#random.between(0.1, 0.25) },
      { action: 'pause', atProgress: this.#random.between(0.3, 0.45) },
      { action: 'stop', atProgress: this.#random.between(0.5, 0.65) },
    ]
    this.state = initialRunState({
      items: options.items,
      steps: options.demo.steps,
      stepMs: options.demo.stepMs,
      ttlMs: options.demo.ttlMs,
      simulated: options.spec.backend === 'memory',
      plan,
    })
  }

  /** Fraction of all steps checkpointed so far. */
  get progress(): number {
    return progressOf(this.state)
  }

  elapsed(): number {
    return performance.now() - this.startedAt
  }

  /** Every worker still running, resumed first if paused (for Ctrl-C). */
  killAll(): void {
    for (const handle of this.#handles.values()) {
      handle.resume()
      handle.kill()
    }
  }

  async run(): Promise<RunOutcome> {
    const done = new Promise<void>((resolve) => {
      this.#resolveDone = resolve
    })
    for (let i = 0; i < this.#options.workers; i++) this.#spawn()
    // The clock's part: resuming the paused worker, and finishing once its late write had its chance.
    this.#ticker = setInterval(() => this.#dispatch({ type: 'tick', at: this.elapsed() }), 20)
    const timeout = setTimeout(() => {
      this.#timedOut = true
      this.#log({ text: `timed out after ${this.#options.timeoutMs} ms`, important: true })
      void this.#finish()
    }, this.#options.timeoutMs)
    await done
    clearTimeout(timeout)
    clearInterval(this.#ticker)
    return {
      workers: Object.values(this.state.workers),
      items: Object.values(this.state.items),
      plan: this.state.plan,
      failures: this.state.failures,
      timedOut: this.#timedOut,
      elapsedMs: this.elapsed(),
    }
  }

  #dispatch(action: RunAction): void {
    const { state, lines, effects } = reduceRun(this.state, action)
    // Strikes are armed as progress is made, i.e. on checkpoints (the seed decides whom they hit).
    const armNow = action.type === 'report' && action.event.type === 'checkpointed'
    this.state = armNow ? armStrikes(state, (names) => this.#random.pick(names)) : state
    for (const line of lines) this.#log(line)
    for (const effect of effects) this.#apply(effect)
    if (readyToFinish(this.state, this.elapsed())) void this.#finish()
  }

  #apply(effect: RunEffect): void {
    switch (effect.type) {
      case 'itemDone':
        for (const handle of this.#handles.values()) handle.send({ type: 'item-done', item: effect.item })
        break
      case 'strike': {
        const handle = this.#handles.get(effect.worker)!
        if (effect.action === 'crash') handle.kill()
        else if (effect.action === 'pause') handle.stop()
        else handle.terminate()
        break
      }
      case 'resume':
        this.#handles.get(effect.worker)!.resume()
        break
      case 'replace':
        this.#spawn(effect.worker)
        break
    }
  }

  #spawn(replaces?: string): void {
    const name = `w${++this.#spawned}`
    const config: WorkerConfig = {
      name,
      store: this.#spec,
      items: Object.keys(this.state.items),
      done: Object.values(this.state.items)
        .filter((item) => item.done)
        .map((item) => item.id),
      steps: this.#options.steps,
      stepMs: this.#options.stepMs,
      ttlMs: this.#options.ttlMs,
      seed: (this.#options.seed + this.#spawned * 7919) >>> 0,
      fence: this.#options.fence,
    }
    const onEvent: Parameters<typeof forkWorker>[1] = (event) =>
      this.#dispatch({
        type: 'report',
        worker: name,
        event,
        at: this.elapsed(),
        ageMs: event.type === 'step' ? Date.now() - event.sentAt : 0,
      })
    const handle =
      this.#spec.backend === 'memory'
        ? inProcessWorker(config, this.#memoryStore!, onEvent)
        : forkWorker(config, onEvent)
    this.#handles.set(name, handle)
    this.#dispatch({
      type: 'spawned',
      worker: name,
      ...(handle.pid ? { pid: handle.pid } : {}),
      ...(replaces ? { replaces } : {}),
    })
    handle.exited.then((exit) =>
      this.#dispatch({
        type: 'exited',
        worker: name,
        code: exit.code,
        signal: exit.signal,
        ...(exit.stderr ? { stderr: exit.stderr } : {}),
      }),
    )
  }

  async #finish(): Promise<void> {
    if (this.state.finishing) return
    const live = liveWorkers(this.state)
    this.#dispatch({ type: 'finishing', timedOut: this.#timedOut })
    for (const worker of live) {
      const handle = this.#handles.get(worker.name)!
      if (worker.status === 'paused') handle.resume()
      handle.send({ type: 'finish' })
    }
    const exits = Promise.all(live.map((worker) => this.#handles.get(worker.name)!.exited))
    const graceMs = this.#options.ttlMs + 5_000
    await within(exits, graceMs)
    const hung = liveWorkers(this.state).filter((worker) => live.some((each) => each.name === worker.name))
    for (const worker of hung) {
      // Recorded before the kill, so the outcome run() returns has it whenever the exit report lands.
      this.#dispatch({ type: 'forceKilled', worker: worker.name, graceMs })
      this.#handles.get(worker.name)!.kill()
    }
    // SIGKILL is not refused: wait for those exits (bounded) so no worker outlives the run.
    await within(Promise.all(hung.map((worker) => this.#handles.get(worker.name)!.exited)), 5_000)
    clearInterval(this.#ticker)
    this.#resolveDone()
  }

  #log(line: { text: string; important: boolean }): void {
    this.#onLine({ at: this.elapsed(), ...line })
  }
}
