// A `pnpm demo --pool` worker process: one LeasePool member. It gets its configuration in a 'start'
// message, reports every event over the IPC channel, and leaves the pool cleanly on SIGTERM or when
// the coordinator says every item is done.
import { hostname } from 'node:os'
import type { PoolCoordinatorMessage, PoolWorkerConfig, PoolWorkerEvent } from './pool-protocol.js'
import { runPoolWorker } from './pool-worker.js'
import { openStores } from './stores.js'

let started = false
let leave!: () => void
const leaving = new Promise<void>((resolve) => {
  leave = resolve
})

function send(event: PoolWorkerEvent): void {
  if (process.connected) process.send!(event)
}

function sendAndExit(event: PoolWorkerEvent, code: number): void {
  if (!process.connected) process.exit(code)
  process.send!(event, () => process.exit(code))
}

// A clean leave: every handler stops after its step, checkpoints, and the pool releases the items.
process.on('SIGTERM', () => leave())
process.on('disconnect', () => leave())

async function main(config: PoolWorkerConfig): Promise<void> {
  const stores = await openStores(config.store, config.fence)
  const holderId = `${config.name}-${hostname()}-${process.pid}`
  try {
    send({ type: 'ready', holderId, pid: process.pid })
    await runPoolWorker({
      config,
      holderId,
      backend: stores.backend,
      downstream: stores.downstream,
      send,
      leave: leaving,
    })
  } finally {
    await stores.close()
  }
}

process.on('message', (message: PoolCoordinatorMessage) => {
  if (message.type === 'finish') {
    leave()
    // A joiner that was never started has nothing to leave.
    if (!started) process.exit(0)
    return
  }
  started = true
  main(message.config).then(
    () => sendAndExit({ type: 'exiting' }, 0),
    (error: unknown) =>
      sendAndExit(
        { type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) },
        1,
      ),
  )
})
