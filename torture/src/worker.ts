// One torture worker process: register workers doing random lease operations, and its share of the
// counter workload, all recorded to this process's history file. Started by the coordinator with
// `fork`; takes its config as JSON in argv[2] and clock offsets over IPC.
import { join } from 'node:path'
import { type Backend, isWorkleaseError, type LeaseRecord } from '@worklease/spec'
import { CounterStore } from './counter-store.js'
import { HistoryWriter, type OpName } from './history.js'
import { hostClockReference } from './host-clock.js'
import { PoolLog, poolMember } from './pool-workload.js'
import { Random } from './random.js'
import { describeRead, RecordingBackend } from './recording-backend.js'
import {
  type RunnerBug,
  type RunnerLeaseConfig,
  RunnerLog,
  runnerCounter,
  runnerProgress,
  runnerWorker,
} from './runner-workload.js'
import { openBackend, type TargetInfo } from './targets.js'

export interface CounterWorkerSpec {
  /** Logical worker name, also its row in `progress`. */
  name: string
  mode: 'fenced' | 'unfenced'
  /** The counter (and the workId guarding it). */
  counter: string
}

export interface WorkerConfig {
  info: TargetInfo
  slot: number
  incarnation: number
  seed: number
  historyDir: string
  counterFile: string
  registerWorkers: number
  workIds: string[]
  ttls: number[]
  opTimeoutMs: number
  counterWorkers: CounterWorkerSpec[]
  increments: number
  counterTtlMs: number
  /** Probability that a counter increment's "work" takes longer than the counter ttl. */
  slowWorkChance: number
  /** Jobs through `@worklease/core`'s Leaser.run, one Leaser each (see runner-workload.ts). */
  runnerWorkers: number
  runnerWorkIds: string[]
  /** The Leaser settings, one per runner worker in turn. */
  runnerLeases: RunnerLeaseConfig[]
  runnerBug?: RunnerBug
  /** LeasePool members (see pool-workload.ts), one Leaser each, over the units below. */
  poolMembers: number
  poolUnits: string[]
  /** The run's {@link hostClockReference}: every history line records the host wall clock's move since. */
  clockReference: number
}

export type ToWorker = { type: 'clock'; offset: number } | { type: 'stop-register' } | { type: 'stop' }
export type FromWorker = { type: 'ready' } | { type: 'fatal'; message: string }

const config = JSON.parse(process.argv[2]!) as WorkerConfig
const proc = `p${config.slot}.${config.incarnation}`
const random = new Random(Random.derive(config.seed, proc))
const history = new HistoryWriter(join(config.historyDir, `${proc}.jsonl`), proc, config.clockReference)
let offset = 0
// The offset a runner's or a pool member's line records: the injected one, and the host wall clock's
// move since the run began, as the history's own lines record it.
const recordedOffset = () => offset + (hostClockReference() - config.clockReference)
let stopRegister = false
let stopAll = false
const encoder = new TextEncoder()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

process.on('message', (message: ToWorker) => {
  if (message.type === 'clock') offset = message.offset
  else if (message.type === 'stop-register') stopRegister = true
  else if (message.type === 'stop') stopAll = stopRegister = true
})
// The coordinator died: nothing will collect this history.
process.on('disconnect', () => process.exit(0))

type Result<T> = { outcome: 'ok'; value: T } | { outcome: 'fail'; code: string } | { outcome: 'info' }

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  promise.catch(() => {}) // a late rejection after the timeout is expected
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

/** Runs one backend call, recording its invocation before and its outcome after. */
async function call<T>(
  fields: { holder: string; op: OpName; workId: string; token?: bigint; ttl?: number; value?: string },
  run: () => Promise<T>,
  describe: (value: T) => { token?: bigint; read?: string | null; clean?: boolean } = () => ({}),
): Promise<Result<T>> {
  const id = history.invoke(fields, offset)
  try {
    const value = await withTimeout(run(), config.opTimeoutMs)
    history.complete(id, 'ok', offset, describe(value))
    return { outcome: 'ok', value }
  } catch (error) {
    history.threw(id, error, offset)
    if (isWorkleaseError(error) && error.code !== 'INVALID_ARGUMENT')
      return { outcome: 'fail', code: error.code }
    return { outcome: 'info' }
  }
}

/**
 * An acquire; where the backend has acquireWithCheckpoint, half of them are that, recorded as an
 * acquire that also read (its state and handoff are judged like a readCheckpoint's).
 */
const acquire = async (backend: Backend, holder: string, workId: string, ttl: number) => {
  const fields = { holder, op: 'acquire', workId, ttl } as const
  if (backend.capabilities.acquireWithCheckpoint && backend.acquireWithCheckpoint && random.chance(0.5)) {
    const result = await call(
      fields,
      () => backend.acquireWithCheckpoint!(workId, holder, ttl),
      ({ record, checkpoint }) => ({ token: record.fencingToken, ...describeRead(checkpoint) }),
    )
    return result.outcome === 'ok' ? { outcome: 'ok' as const, value: result.value.record } : result
  }
  return call(
    fields,
    () => backend.acquire(workId, holder, ttl),
    (record) => ({ token: record.fencingToken }),
  )
}

const onRecord = (record: LeaseRecord, op: OpName, extra: { ttl?: number; value?: string } = {}) => ({
  holder: record.holderId,
  op,
  workId: record.workId,
  token: record.fencingToken,
  ...extra,
})

/**
 * A checkpoint's state names what it is: the holder, the lease's token, and the holder's running
 * count, which grows in the order the holder sends them (unique values are what the checker needs;
 * the rest makes a history slice readable).
 */
const stateOf = (holder: string, record: LeaseRecord, n: number) => `${holder}#${record.fencingToken}.${n}`

async function registerWorker(backend: Backend, index: number): Promise<void> {
  const holder = `${proc}-r${index}`
  let record: LeaseRecord | null = null
  let ttl = 0
  const stale: LeaseRecord[] = []
  let seq = 0
  let wary = 0
  const retire = () => {
    wary = 0
    if (record) stale.push(record)
    if (stale.length > 3) stale.shift()
    record = null
  }
  while (!stopRegister) {
    await sleep(random.int(2, 25))
    if (!record) {
      if (stale.length > 0 && random.chance(0.08)) {
        // A paused or confused holder using a record it no longer holds: the store must refuse it.
        const old = random.pick(stale)
        const op = random.pick(['checkpoint', 'renew', 'release', 'readCheckpoint'] as const)
        const value = stateOf(holder, old, seq++)
        if (op === 'checkpoint')
          await call(onRecord(old, op, { ttl: 200, value }), () =>
            backend.checkpoint(old, encoder.encode(value), 200),
          )
        else if (op === 'renew') await call(onRecord(old, op, { ttl: 200 }), () => backend.renew(old, 200))
        else if (op === 'release') await call(onRecord(old, op), () => backend.release(old))
        else await call(onRecord(old, op), () => backend.readCheckpoint(old), describeRead)
        continue
      }
      const workId = random.pick(config.workIds)
      ttl = random.pick(config.ttls)
      const result = await acquire(backend, holder, workId, ttl)
      if (result.outcome === 'ok') record = result.value
      continue
    }
    const current: LeaseRecord = record
    // Now and then a shorter ttl than the lease was taken with: under the max rule it must not bring
    // the expiry forward.
    const extendBy = random.chance(0.15) ? Math.max(50, Math.round(ttl * random.pick([0.25, 0.5]))) : ttl
    // After a checkpoint or renew whose outcome is unknown, the holder stays on a while and reads more:
    // that call may still land (late, after newer ones), and only a read shows what it did.
    const [checkpoint, renew, read, release] = wary > 0 ? [0.35, 0.5, 0.95, 1] : [0.35, 0.55, 0.78, 0.94]
    if (wary > 0) wary--
    const roll = random.next()
    if (roll < checkpoint) {
      const value = stateOf(holder, current, seq++)
      const result = await call(onRecord(current, 'checkpoint', { ttl: extendBy, value }), () =>
        backend.checkpoint(current, encoder.encode(value), extendBy),
      )
      if (result.outcome === 'fail') retire()
      if (result.outcome === 'info') wary = 20
    } else if (roll < renew) {
      const result = await call(onRecord(current, 'renew', { ttl: extendBy }), () =>
        backend.renew(current, extendBy),
      )
      if (result.outcome === 'fail' && (result.code === 'FENCED' || random.chance(0.5))) retire()
      if (result.outcome === 'info') wary = 20
    } else if (roll < read) {
      const result = await call(
        onRecord(current, 'readCheckpoint'),
        () => backend.readCheckpoint(current),
        describeRead,
      )
      if (result.outcome === 'fail') retire()
    } else if (roll < release) {
      await call(onRecord(current, 'release'), () => backend.release(current))
      retire()
    } else {
      // Walk away without releasing, as a crashed holder would: the successor sees cleanHandoff false.
      retire()
    }
  }
}

async function counterWorker(backend: Backend, store: CounterStore, spec: CounterWorkerSpec): Promise<void> {
  const holder = `${proc}-${spec.name}`
  while (!stopAll && store.progress(spec.name) < config.increments) {
    const got = await acquire(backend, holder, spec.counter, config.counterTtlMs)
    if (got.outcome !== 'ok') {
      await sleep(got.outcome === 'fail' ? random.int(5, 25) : random.int(20, 60))
      continue
    }
    const record = got.value
    let value: number | null
    if (spec.mode === 'fenced') value = store.claim(spec.counter, record.fencingToken)
    else value = store.read(spec.counter)
    if (value !== null) {
      // The work between read and write; sometimes longer than the ttl (a GC pause, a slow disk).
      await sleep(
        random.chance(config.slowWorkChance)
          ? random.int(config.counterTtlMs + 50, config.counterTtlMs * 2)
          : random.int(0, 4),
      )
      if (spec.mode === 'fenced') store.fencedWrite(spec.counter, record.fencingToken, value + 1, spec.name)
      else store.unfencedWrite(spec.counter, value + 1, spec.name)
    }
    await call(onRecord(record, 'release'), () => backend.release(record))
  }
}

async function main(): Promise<void> {
  const clock = { now: () => Date.now() + offset }
  const { backend, close } = await openBackend(config.info, clock)
  const store = new CounterStore(config.counterFile)
  process.send?.({ type: 'ready' } satisfies FromWorker)
  const loops: Promise<void>[] = []
  for (let i = 0; i < config.registerWorkers; i++) loops.push(registerWorker(backend, i))
  for (const spec of config.counterWorkers) loops.push(counterWorker(backend, store, spec))
  const runnerLog = new RunnerLog(config.historyDir, proc)
  const recording = new RecordingBackend(backend, history, () => offset)
  for (let i = 0; i < config.runnerWorkers; i++) {
    loops.push(
      runnerWorker({
        backend: recording,
        holderId: `${proc}-j${i}`,
        lease: config.runnerLeases[i % config.runnerLeases.length]!,
        workIds: config.runnerWorkIds,
        counterFor: runnerCounter,
        progressName: runnerProgress(config.slot, i),
        store,
        log: runnerLog,
        random: new Random(Random.derive(config.seed, `${proc}-j${i}`)),
        offset: recordedOffset,
        stopped: () => stopAll,
        ...(config.runnerBug ? { bug: config.runnerBug } : {}),
      }),
    )
  }
  const poolLog = new PoolLog(config.historyDir, proc)
  for (let i = 0; i < config.poolMembers; i++) {
    loops.push(
      poolMember({
        backend: recording,
        holderPrefix: `${proc}-m${i}`,
        lease: config.runnerLeases[i % config.runnerLeases.length]!,
        units: config.poolUnits,
        log: poolLog,
        random: new Random(Random.derive(config.seed, `${proc}-m${i}`)),
        offset: recordedOffset,
        stopped: () => stopAll,
      }),
    )
  }
  await Promise.all(loops)
  while (!stopAll) await sleep(50)
  store.close()
  runnerLog.close()
  poolLog.close()
  history.close()
  await Promise.race([close().catch(() => {}), sleep(2_000)])
  process.exit(0)
}

main().catch((error: unknown) => {
  process.send?.({ type: 'fatal', message: String((error as Error)?.stack ?? error) } satisfies FromWorker)
  process.exit(1)
})
