import { performance } from 'node:perf_hooks'
import { LeasePool, Leaser } from '@worklease/core'
import type { Backend } from '@worklease/spec'
import type { Downstream } from './downstream.js'
import { DEMO_POOL_GROUP, type PoolWorkerConfig, type PoolWorkerEvent } from './pool-protocol.js'
import { Random } from './random.js'

/** What {@link runPoolWorker} runs on. */
export interface PoolWorkerDeps {
  config: PoolWorkerConfig
  holderId: string
  backend: Backend
  downstream: Pick<Downstream, 'claim' | 'write'>
  send(event: PoolWorkerEvent): void
  /** Resolves when the worker should leave: SIGTERM, or every item is done. */
  leave: Promise<void>
}

const now = () => performance.timeOrigin + performance.now()
const encode = (step: number) => new TextEncoder().encode(String(step))
const decode = (state: Uint8Array | null) => (state ? Number(new TextDecoder().decode(state)) : 0)

/**
 * One member of the demo's LeasePool: the pool decides which items this worker runs (about its fair
 * share, moving items by consent as workers join and leave); the handler runs an item's remaining
 * steps from its checkpoint, each written downstream under the fencing token, and stops after the
 * step in progress when the pool asks for the item back. Leaves (a clean close) when told to.
 */
export async function runPoolWorker(deps: PoolWorkerDeps): Promise<void> {
  const { config, downstream, send } = deps
  const random = new Random(config.seed)
  const leaser = new Leaser({
    backend: deps.backend,
    ttlMs: config.ttlMs,
    holderId: deps.holderId,
    random: () => random.next(),
  })
  const pool = new LeasePool({
    leaser,
    group: DEMO_POOL_GROUP,
    units: config.items,
    random: () => random.next(),
    handler: async (lease, unit) => {
      const item = unit.id
      const token = lease.fencingToken
      const { state, cleanHandoff } = await lease.readCheckpoint()
      let stepsDone = decode(state)
      send({ type: 'taken', item, token, cleanHandoff, stepsDone, at: now() })
      const ended = (how: 'done' | 'consent' | 'lost') =>
        send({ type: 'ended', item, token, how, stepsDone, at: now() })
      // Before any work: from now on the downstream refuses every older token, written or not.
      const claimed = await downstream.claim(item, token, config.name)
      send({ type: 'claimed', item, token, accepted: claimed })
      if (!claimed) {
        ended('lost')
        lease.abandon()
        return
      }
      try {
        while (stepsDone < config.steps) {
          if (unit.signal.aborted) break
          // The step's work; it ignores the signal, like a call that cannot be interrupted.
          await new Promise((resolve) => setTimeout(resolve, config.stepMs * random.between(0.75, 1.25)))
          const step = stepsDone + 1
          if (!(await downstream.write(item, step, token, config.name))) {
            send({ type: 'refused', item, token, step })
            ended('lost')
            lease.abandon()
            return
          }
          await lease.checkpoint(encode(step))
          stepsDone = step
          send({ type: 'checkpointed', item, token, step })
        }
      } catch (error) {
        // A lost lease ends the run (the pool forgets the item); anything else is a failure, retried.
        if (!lease.held) ended('lost')
        throw error
      }
      // Stopped with the lease held and the last step checkpointed: the pool releases, cleanly.
      ended(stepsDone >= config.steps ? 'done' : lease.held ? 'consent' : 'lost')
      // Asked to stop: returning (not throwing) tells the pool the run was stopped, not finished.
    },
  })
  pool.on((event) => {
    if (event.type === 'givingUp') send({ type: 'givingUp', item: event.unit })
    else if (event.type === 'released') send({ type: 'released', item: event.unit })
    else if (event.type === 'rebalanceFailed') {
      send({ type: 'rebalanceFailed', message: String((event.error as Error)?.message ?? event.error) })
    } else if (event.type === 'handlerFailed') {
      const error = event.error as Error
      send({ type: 'failed', message: `handlerFailed: ${error?.stack ?? String(error)}` })
    }
  })
  leaser.on('lost', ({ workId, reason }) => {
    if (workId.startsWith(`${DEMO_POOL_GROUP}/m/`)) send({ type: 'membershipLost', reason })
  })
  try {
    await pool.start()
    await deps.leave
  } finally {
    await pool.close()
    await leaser.close()
  }
}
