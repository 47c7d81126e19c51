// The coordinator's end of a run, with fake workers: w1 does the one item and exits on 'finish'; w2
// never answers 'finish' (hung) and only goes away when the coordinator SIGKILLs it after the grace.
import { expect, test, vi } from 'vitest'
import type { CoordinatorMessage, WorkerConfig, WorkerEvent } from '../src/protocol.js'
import type { WorkerExit, WorkerHandle } from '../src/worker-handles.js'
import { FINISH_RUN, FINISH_RUN_ARGS } from './finish-run.js'

vi.mock('../src/worker-handles.js', () => ({
  forkWorker(config: WorkerConfig, onEvent: (event: WorkerEvent) => void): WorkerHandle {
    let resolveExit!: (exit: WorkerExit) => void
    const exited = new Promise<WorkerExit>((resolve) => {
      resolveExit = resolve
    })
    const hung = config.name === 'w2'
    setTimeout(() => {
      onEvent({ type: 'ready', holderId: config.name, pid: 0 })
      if (hung) return
      const item = config.items[0]!
      onEvent({ type: 'acquired', item, token: 1n, cleanHandoff: true, stepsDone: 0 })
      onEvent({ type: 'claimed', item, token: 1n, accepted: true })
      for (let step = 1; step <= config.steps; step++) {
        onEvent({ type: 'wrote', item, token: 1n, step, accepted: true })
        onEvent({ type: 'checkpointed', item, token: 1n, step })
      }
      onEvent({ type: 'done', item, token: 1n })
    }, 10)
    return {
      pid: 0,
      send(message: CoordinatorMessage) {
        if (message.type === 'finish' && !hung) {
          onEvent({ type: 'exiting' })
          setTimeout(() => resolveExit({ code: 0, signal: null, stderr: '' }), 5)
        }
      },
      kill: () => setTimeout(() => resolveExit({ code: null, signal: 'SIGKILL', stderr: '' }), 5),
      stop: () => undefined,
      resume: () => undefined,
      terminate: () => undefined,
      exited,
    }
  },
  inProcessWorker() {
    throw new Error('not used')
  },
}))

const { Coordinator } = await import('../src/coordinator.js')
const { audit } = await import('../src/audit.js')
const { parseOptions } = await import('../src/options.js')

test('a worker SIGKILLed because it did not exit after finish fails "run finished, no worker failed"', async () => {
  const demo = parseOptions([...FINISH_RUN_ARGS])
  const coordinator = new Coordinator({ demo, ...FINISH_RUN })
  const outcome = await coordinator.run()
  expect(outcome.failures.map((failure) => failure.split('\n')[0])).toEqual([
    'w2 did not exit within 5100 ms of being told to finish: SIGKILLed',
  ])
  const checks = audit({
    steps: 2,
    outcome,
    final: [{ item: 'item-01', stepsDone: 2, token: 1n }],
    histories: new Map([
      [
        'item-01',
        [
          { kind: 'claim', token: 1n, worker: 'w1' },
          { kind: 'write', step: 1, token: 1n, worker: 'w1' },
          { kind: 'write', step: 2, token: 1n, worker: 'w1' },
        ],
      ],
    ]),
  })
  const finished = checks.find((check) => check.name === 'run finished, no worker failed')!
  expect(finished.pass).toBe(false)
  expect(finished.detail).toContain('w2 did not exit')
  // The kill's exit report, arriving afterwards, does not count the same failure twice.
  await new Promise((resolve) => setTimeout(resolve, 50))
  expect(coordinator.state.failures).toHaveLength(1)
  expect(coordinator.state.workers.w2!.status).toBe('failed')
}, 20_000)
