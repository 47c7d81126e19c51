import { type ChildProcess, fork } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { FromWorker, ToWorker, WorkerConfig } from './worker.js'

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url))
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** One worker process: slot `index` in its `incarnation` (a SIGKILLed slot starts again, one higher). */
export interface WorkerSlot {
  readonly index: number
  readonly incarnation: number
  readonly child: ChildProcess
  readonly exited: Promise<void>
}

/**
 * The coordinator's worker processes: starts them, replaces a killed one with its next incarnation,
 * tells them to stop, and keeps the first failure of any of them (a worker that cannot start or
 * exits on its own breaks the run, not a fault the nemesis injected).
 */
export class WorkerFleet {
  /** The live incarnation of each slot, by index. */
  readonly slots: WorkerSlot[] = []
  /** The first worker failure, if any: the run stops and reports it. */
  error: string | undefined
  /** Register workers stopped: incarnations started from now on run none. */
  #registerStopped = false
  /** The coordinator is stopping the workers: their exits are expected. */
  #stopping = false
  readonly #configOf: (index: number, incarnation: number, registerStopped: boolean) => WorkerConfig

  constructor(configOf: (index: number, incarnation: number, registerStopped: boolean) => WorkerConfig) {
    this.#configOf = configOf
  }

  /** Starts slots 0..count-1, one after another, each when the previous one is ready. */
  async start(count: number): Promise<void> {
    for (let i = 0; i < count; i++) this.slots.push(await this.#spawn(i, 0))
  }

  /** Starts the next incarnation of a slot whose process was killed and has exited. */
  async respawn(slot: WorkerSlot): Promise<WorkerSlot> {
    const fresh = await this.#spawn(slot.index, slot.incarnation + 1)
    this.slots[slot.index] = fresh
    return fresh
  }

  send(slot: WorkerSlot, message: ToWorker): void {
    if (slot.child.connected) slot.child.send(message, () => {})
  }

  stopRegister(): void {
    this.#registerStopped = true
    for (const slot of this.slots) this.send(slot, { type: 'stop-register' })
  }

  /** Lets the workers finish their in-flight operations and exit (at most 10 s), then kills the rest. */
  async stop(): Promise<void> {
    this.#stopping = true
    for (const slot of this.slots) this.send(slot, { type: 'stop' })
    await Promise.race([Promise.all(this.slots.map((s) => s.exited)), sleep(10_000)])
    this.kill()
  }

  kill(): void {
    this.#stopping = true
    for (const slot of this.slots) slot.child.kill('SIGKILL')
  }

  async #spawn(index: number, incarnation: number): Promise<WorkerSlot> {
    const config = this.#configOf(index, incarnation, this.#registerStopped)
    const child = fork(WORKER, [JSON.stringify(config)], {
      execArgv: ['--import', TSX],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    })
    let stderr = ''
    child.stderr!.setEncoding('utf8')
    child.stderr!.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000)
    })
    const ready = new Promise<void>((resolve, reject) => {
      child.on('message', (message: FromWorker) => {
        if (message.type === 'ready') resolve()
        if (message.type === 'fatal') {
          this.error ??= `worker p${index}.${incarnation}: ${message.message}`
          reject(new Error(this.error))
        }
      })
      child.once('exit', (code, signal) => {
        if (code !== 0 && signal !== 'SIGKILL' && !this.#stopping) {
          this.error ??= `worker p${index}.${incarnation} exited with ${code ?? signal}: ${stderr}`
        }
        reject(new Error(`worker p${index}.${incarnation} exited before it was ready: ${stderr}`))
      })
    })
    const slot: WorkerSlot = {
      index,
      incarnation,
      child,
      exited: new Promise((resolve) => child.once('exit', () => resolve())),
    }
    await ready
    return slot
  }
}
