import { fork } from 'node:child_process'
import { hostname } from 'node:os'
import type { MemoryStore } from '@worklease/memory'
import type { CoordinatorMessage, WorkerConfig, WorkerEvent } from './protocol.js'
import { openStores } from './stores.js'
import { VirtualProcess } from './virtual-process.js'
import { runWorker, type WorkerControl } from './worker.js'

export interface WorkerExit {
  code: number | null
  signal: string | null
  /** The end of the worker's stderr, to explain an unexpected exit. */
  stderr: string
}

/** How the coordinator drives one worker, whether a child process or an in-process one. */
export interface WorkerHandle {
  readonly pid: number | undefined
  send(message: CoordinatorMessage): void
  /** SIGKILL */
  kill(): void
  /** SIGSTOP */
  stop(): void
  /** SIGCONT */
  resume(): void
  /** SIGTERM: a graceful stop */
  terminate(): void
  readonly exited: Promise<WorkerExit>
}

const WORKER_SCRIPT = new URL('./worker-process.ts', import.meta.url)

/**
 * A worker in its own process, forked with the same Node.js flags as the demo (so tsx's loader
 * runs the TypeScript worker script too). The IPC channel uses structured clone, so tokens stay bigint.
 */
export function forkWorker(config: WorkerConfig, onEvent: (event: WorkerEvent) => void): WorkerHandle {
  const child = fork(WORKER_SCRIPT, [], {
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  })
  let stderr = ''
  child.stderr?.setEncoding('utf8')
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4096)
  })
  child.on('message', (event) => onEvent(event as WorkerEvent))
  // The coordinator only sends while the child is connected; a write racing its exit is dropped.
  child.on('error', () => undefined)
  const exited = new Promise<WorkerExit>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, stderr })),
  )
  const signal = (name: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name)
  }
  child.send({ type: 'start', config } satisfies CoordinatorMessage)
  return {
    pid: child.pid,
    send: (message) => {
      if (child.connected) child.send(message, () => undefined)
    },
    kill: () => signal('SIGKILL'),
    stop: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    terminate: () => signal('SIGTERM'),
    exited,
  }
}

/**
 * A worker inside the demo's own process, for the memory backend: a {@link VirtualProcess} stands in
 * for the kernel's process control.
 */
export function inProcessWorker(
  config: WorkerConfig,
  memoryStore: MemoryStore,
  onEvent: (event: WorkerEvent) => void,
): WorkerHandle {
  const vp = new VirtualProcess()
  const control: WorkerControl = { stopping: false, finished: false, done: new Set() }
  const opening = openStores(config.store, config.fence, memoryStore)
  const holderId = `${config.name}-${hostname()}-${process.pid}`
  let resolveExit!: (exit: WorkerExit) => void
  const exited = new Promise<WorkerExit>((resolve) => {
    resolveExit = resolve
  })
  const send = (event: WorkerEvent) => {
    if (!vp.killed) onEvent(event)
  }
  const fail = (error: unknown) => {
    send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) })
    resolveExit({ code: 1, signal: null, stderr: '' })
  }
  opening.then(async (stores) => {
    send({ type: 'ready', holderId, pid: process.pid })
    try {
      await runWorker({
        config,
        holderId,
        backend: vp.wrapBackend(stores.backend),
        downstream: vp.wrapDownstream(stores.downstream),
        timers: vp.timers,
        control,
        send,
      })
    } catch (error) {
      await stores.close()
      return fail(error)
    }
    await stores.close()
    send({ type: 'exiting' })
    resolveExit({ code: 0, signal: null, stderr: '' })
  }, fail)
  return {
    pid: undefined,
    send: (message) => {
      if (message.type === 'item-done') control.done.add(message.item)
      if (message.type === 'finish') control.finished = true
    },
    kill: () => {
      vp.kill()
      opening.then((stores) => stores.close()).catch(() => undefined)
      resolveExit({ code: null, signal: 'SIGKILL', stderr: '' })
    },
    stop: () => vp.stop(),
    resume: () => vp.continue(),
    terminate: () => {
      control.stopping = true
    },
    exited,
  }
}
