import type { Timers } from '@worklease/core'
import type { Backend } from '@worklease/spec'
import type { Downstream } from './downstream.js'

interface VirtualTimer {
  handle: ReturnType<typeof setTimeout> | undefined
  due: number
  callback: () => void
}

/**
 * A worker "process" inside the demo's own process, for the memory backend (whose state cannot be
 * shared between processes). It reproduces what the kernel does to a real one:
 * - stopped (SIGSTOP): none of its timers fire and none of its I/O starts or completes; time moves on.
 *   On continue (SIGCONT), overdue timers fire in due order and held I/O proceeds.
 * - killed (SIGKILL): nothing of it ever runs again; its leases are left to expire.
 */
export class VirtualProcess {
  #stopped = false
  #killed = false
  #waiters: (() => void)[] = []
  #overdue: VirtualTimer[] = []

  readonly timers: Timers = {
    now: () => performance.now(),
    setTimeout: (callback: () => void, ms: number) => {
      const timer: VirtualTimer = { handle: undefined, due: performance.now() + ms, callback }
      timer.handle = setTimeout(() => this.#fire(timer), Math.max(0, ms))
      return timer
    },
    clearTimeout: (handle: unknown) => {
      const timer = handle as VirtualTimer | undefined
      if (!timer) return
      clearTimeout(timer.handle)
      this.#overdue = this.#overdue.filter((other) => other !== timer)
    },
  }

  get stopped(): boolean {
    return this.#stopped
  }

  get killed(): boolean {
    return this.#killed
  }

  stop(): void {
    this.#stopped = true
  }

  continue(): void {
    if (this.#killed) return
    this.#stopped = false
    const overdue = this.#overdue.sort((a, b) => a.due - b.due)
    this.#overdue = []
    for (const timer of overdue) timer.callback()
    const waiters = this.#waiters
    this.#waiters = []
    for (const wake of waiters) wake()
  }

  kill(): void {
    this.#killed = true
    this.#overdue = []
    this.#waiters = []
  }

  /** Runs `fn` as this process's I/O: not before it runs, and its result is seen only while it runs. */
  async io<T>(fn: () => Promise<T>): Promise<T> {
    await this.#running()
    const result = await fn()
    await this.#running()
    return result
  }

  /** The backend, as seen from inside this process. */
  wrapBackend(backend: Backend): Backend {
    return {
      capabilities: backend.capabilities,
      acquire: (...args) => this.io(() => backend.acquire(...args)),
      checkpoint: (...args) => this.io(() => backend.checkpoint(...args)),
      renew: (...args) => this.io(() => backend.renew(...args)),
      release: (...args) => this.io(() => backend.release(...args)),
      readCheckpoint: (...args) => this.io(() => backend.readCheckpoint(...args)),
    }
  }

  /** The downstream store, as seen from inside this process. */
  wrapDownstream(downstream: Downstream): Pick<Downstream, 'claim' | 'write'> {
    return {
      claim: (...args) => this.io(() => downstream.claim(...args)),
      write: (...args) => this.io(() => downstream.write(...args)),
    }
  }

  #fire(timer: VirtualTimer): void {
    if (this.#killed) return
    if (this.#stopped) this.#overdue.push(timer)
    else timer.callback()
  }

  #running(): Promise<void> {
    // A killed process never gets here again: the promise stays pending and is collected with it.
    if (this.#killed) return new Promise(() => undefined)
    if (!this.#stopped) return Promise.resolve()
    return new Promise((resolve) => this.#waiters.push(resolve))
  }
}
