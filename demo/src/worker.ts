import { isLeaseLostError, type Lease, Leaser, type Timers } from '@worklease/core'
import { type Backend, isLeaseHeldError } from '@worklease/spec'
import type { Downstream } from './downstream.js'
import type { WorkerConfig, WorkerEvent } from './protocol.js'
import { Random } from './random.js'

/** Flags the worker's host flips from outside (a signal handler, a coordinator message). */
export interface WorkerControl {
  /** A graceful stop was asked for (SIGTERM): finish the current step, release, leave. */
  stopping: boolean
  /** Every item is done: leave. */
  finished: boolean
  /** Items known to be done, so the worker does not acquire them just to find out. */
  readonly done: Set<string>
}

/** What {@link runWorker} runs on; a child process and an in-process worker provide it differently. */
export interface WorkerDeps {
  config: WorkerConfig
  holderId: string
  backend: Backend
  downstream: Pick<Downstream, 'claim' | 'write'>
  timers: Timers
  control: WorkerControl
  send(event: WorkerEvent): void
}

const encode = (step: number) => new TextEncoder().encode(String(step))
const decode = (state: Uint8Array | null) => (state ? Number(new TextDecoder().decode(state)) : 0)

function sleep(timers: Timers, ms: number): Promise<void> {
  return new Promise((resolve) => timers.setTimeout(resolve, ms))
}

/**
 * One worker: takes whichever item is free, resumes it from its last checkpoint, and runs its
 * remaining steps, writing each result downstream with its fencing token and checkpointing after it.
 * Returns when every item is done or a graceful stop was asked for.
 */
export async function runWorker(deps: WorkerDeps): Promise<void> {
  const { config, timers, control, send } = deps
  const random = new Random(config.seed)
  for (const item of config.done) control.done.add(item)
  const leaser = new Leaser({
    backend: deps.backend,
    ttlMs: config.ttlMs,
    holderId: deps.holderId,
    timers,
    random: () => random.next(),
  })
  leaser.on('lost', ({ workId, fencingToken, reason }) =>
    send({ type: 'lost', item: workId, token: fencingToken, reason }),
  )
  // Each worker starts at its own place in the list, so they spread out instead of racing for item 1.
  const offset = Math.floor(random.next() * config.items.length)
  const order = [...config.items.slice(offset), ...config.items.slice(0, offset)]
  try {
    while (!control.finished && !control.stopping) {
      let worked = false
      for (const item of order) {
        if (control.finished || control.stopping) break
        if (control.done.has(item)) continue
        let lease: Lease
        try {
          lease = await leaser.acquire(item)
        } catch (error) {
          if (isLeaseHeldError(error)) continue
          throw error
        }
        worked = true
        await workOn(deps, lease, random)
      }
      // Everything left is held by someone (maybe a crashed worker whose lease has yet to expire).
      if (!worked) await sleep(timers, 100 + random.next() * 100)
    }
  } finally {
    await leaser.close()
  }
}

async function workOn(deps: WorkerDeps, lease: Lease, random: Random): Promise<void> {
  const { config, downstream, timers, control, send } = deps
  const item = lease.workId
  const token = lease.fencingToken
  try {
    const { state, cleanHandoff } = await lease.readCheckpoint()
    const stepsDone = decode(state)
    send({ type: 'acquired', item, token, cleanHandoff, stepsDone })
    if (stepsDone >= config.steps) {
      control.done.add(item)
    } else {
      // Before any work: from now on the downstream refuses every older token, written or not.
      const claimed = await downstream.claim(item, token, config.name)
      send({ type: 'claimed', item, token, accepted: claimed })
      if (!claimed) {
        lease.abandon()
        return
      }
      for (let step = stepsDone + 1; step <= config.steps; step++) {
        if (control.stopping || control.finished) break
        lease.throwIfLost()
        send({ type: 'step', item, token, step, sentAt: Date.now() })
        // The work itself. It ignores lease.signal on purpose, like a call that cannot be interrupted:
        // a process paused here wakes up and writes with its old token, whatever it checked before.
        // Only the downstream's fence can refuse that write.
        await sleep(timers, config.stepMs * random.between(0.75, 1.25))
        const accepted = await downstream.write(item, step, token, config.name)
        send({ type: 'wrote', item, token, step, accepted })
        if (!accepted) {
          // A newer holder has reached the downstream, so this lease is gone; releasing could only fail.
          lease.abandon()
          send({ type: 'lost', item, token, reason: 'refused downstream' })
          return
        }
        await lease.checkpoint(encode(step))
        send({ type: 'checkpointed', item, token, step })
        if (step === config.steps) {
          control.done.add(item)
          send({ type: 'done', item, token })
        }
      }
    }
    await lease.release()
    if (!lease.lossError) send({ type: 'released', item, token, clean: true })
  } catch (error) {
    // The loss was reported by the leaser's 'lost' event; move on to other items.
    if (isLeaseLostError(error)) return
    throw error
  }
}
