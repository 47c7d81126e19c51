// The --pool coordinator's end of a run, with fake child processes: w1 runs the one item, the others
// only report ready; on 'finish' every worker exits but w2, which hangs until the coordinator SIGKILLs it.
import { EventEmitter } from 'node:events'
import { expect, test, vi } from 'vitest'
import type { PoolCoordinatorMessage, PoolWorkerEvent } from '../src/pool-protocol.js'
import { FINISH_RUN, FINISH_RUN_ARGS } from './finish-run.js'

vi.mock('node:child_process', () => {
  let forked = 0
  return {
    fork() {
      const name = `w${++forked}`
      const child = Object.assign(new EventEmitter(), {
        connected: true,
        exitCode: null as number | null,
        signalCode: null as string | null,
        stderr: Object.assign(new EventEmitter(), { setEncoding: () => child.stderr }),
        send(message: PoolCoordinatorMessage) {
          setTimeout(() => receive(message), 1)
          return true
        },
        // SIGTERM is a clean leave (the coordinator sends it midway: the 'leave' change).
        kill(signal: string) {
          if (signal === 'SIGTERM') exit(0, null)
          else exit(null, signal)
          return true
        },
      })
      const report = (event: PoolWorkerEvent) => child.emit('message', event)
      const exit = (code: number | null, signal: string | null) =>
        setTimeout(() => {
          child.connected = false
          child.exitCode = code
          child.signalCode = signal
          child.emit('exit', code, signal)
        }, 5)
      const receive = (message: PoolCoordinatorMessage) => {
        if (message.type === 'finish') {
          if (name !== 'w2') exit(0, null)
          return
        }
        report({ type: 'ready', holderId: name, pid: 0 })
        if (name !== 'w1') return
        const item = message.config.items[0]!
        report({ type: 'taken', item, token: 1n, cleanHandoff: true, stepsDone: 0, at: 1 })
        for (let step = 1; step <= message.config.steps; step++)
          report({ type: 'checkpointed', item, token: 1n, step })
        report({ type: 'ended', item, token: 1n, how: 'done', stepsDone: message.config.steps, at: 2 })
      }
      return child
    },
  }
})

const { PoolCoordinator } = await import('../src/pool-coordinator.js')
const { parseOptions } = await import('../src/options.js')

test('a pool worker SIGKILLed because it did not exit after finish is a failure in the outcome', async () => {
  const demo = parseOptions(['--pool', ...FINISH_RUN_ARGS])
  const coordinator = new PoolCoordinator({ demo, ...FINISH_RUN })
  const outcome = await coordinator.run()
  expect(outcome.timedOut).toBe(false)
  expect(outcome.state.failures.map((failure) => failure.split('\n')[0])).toEqual([
    'w2 did not exit within 5100 ms of being told to finish: SIGKILLed',
  ])
  expect(outcome.state.workers.w2!.status).toBe('failed')
  // The kill's exit report, arriving afterwards, does not count the same failure twice.
  await new Promise((resolve) => setTimeout(resolve, 50))
  expect(coordinator.state.failures).toHaveLength(1)
}, 20_000)
