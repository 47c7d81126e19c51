// The worker process the coordinator forks (one per worker). It gets its configuration in a 'start'
// message, reports every event back over the IPC channel, and handles SIGTERM as a graceful stop.
import { hostname } from 'node:os'
import { systemTimers } from '@worklease/core'
import type { CoordinatorMessage, WorkerConfig, WorkerEvent } from './protocol.js'
import { openStores } from './stores.js'
import { runWorker, type WorkerControl } from './worker.js'

const control: WorkerControl = { stopping: false, finished: false, done: new Set() }

function send(event: WorkerEvent): void {
  // The coordinator may be gone (it was killed itself): then there is no one to report to.
  if (process.connected) process.send!(event)
}

/** Exits once the last report is on its way (process.send is asynchronous). */
function sendAndExit(event: WorkerEvent, code: number): void {
  if (!process.connected) process.exit(code)
  process.send!(event, () => process.exit(code))
}

// A graceful stop: finish the step in progress, checkpoint it, release the lease, exit.
process.on('SIGTERM', () => {
  control.stopping = true
})
process.on('disconnect', () => {
  // Without a coordinator there is nothing to report to and no one to stop us: leave cleanly.
  control.finished = true
})

async function main(config: WorkerConfig): Promise<void> {
  const stores = await openStores(config.store, config.fence)
  const holderId = `${config.name}-${hostname()}-${process.pid}`
  try {
    send({ type: 'ready', holderId, pid: process.pid })
    await runWorker({
      config,
      holderId,
      backend: stores.backend,
      downstream: stores.downstream,
      timers: systemTimers,
      control,
      send,
    })
  } finally {
    await stores.close()
  }
}

process.on('message', (message: CoordinatorMessage) => {
  switch (message.type) {
    case 'start':
      main(message.config).then(
        () => sendAndExit({ type: 'exiting' }, 0),
        (error: unknown) =>
          sendAndExit(
            {
              type: 'failed',
              message: error instanceof Error ? (error.stack ?? error.message) : String(error),
            },
            1,
          ),
      )
      break
    case 'item-done':
      control.done.add(message.item)
      break
    case 'finish':
      control.finished = true
      break
  }
})
