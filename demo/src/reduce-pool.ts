import type { PoolWorkerEvent } from './pool-protocol.js'

export type PoolWorkerStatus = 'starting' | 'running' | 'leaving' | 'left' | 'killed' | 'exited' | 'failed'

/** What the coordinator did to a worker: joined midway, left cleanly (SIGTERM), or crashed (SIGKILL). */
export type PoolWorkerRole = 'joined' | 'left' | 'killed'

export interface PoolWorkerState {
  readonly name: string
  readonly holderId?: string
  readonly status: PoolWorkerStatus
  readonly role?: PoolWorkerRole
  /** Items this worker runs now, as it reported. */
  readonly items: readonly string[]
  /** Items it took over the run. */
  readonly taken: number
  /**
   * Of those, the ones it took by consent: an item another worker had run and gave back (a clean
   * handoff). Not a fresh item, nor one taken after its holder's lease expired (cleanHandoff false).
   */
  readonly consentTaken: number
  /** When it was told to leave (SIGTERM), on the clock workers report `at` on. */
  readonly leavingAt?: number
}

export interface PoolItemState {
  readonly id: string
  readonly holder?: string
  readonly token: bigint
  readonly stepsDone: number
  /** Takes after the first: how often the item moved to another worker. */
  readonly moves: number
  readonly clean: number
  readonly unclean: number
  readonly done: boolean
}

/** One worker's run of one item, from its handler's start to its end (or the worker's death). */
export interface PoolRun {
  readonly item: string
  readonly worker: string
  readonly token: bigint
  readonly cleanHandoff: boolean
  /** Steps done when the run started (its readCheckpoint), and the last step it checkpointed. */
  readonly resumedAt: number
  readonly checkpointed: number
  readonly startedAt: number
  readonly end?: { readonly at: number; readonly how: 'done' | 'consent' | 'lost' | 'killed' }
  /** A consent end whose release the worker reported: the lease was let go, not left to expire. */
  readonly released?: true
}

export interface PoolState {
  readonly steps: number
  readonly workers: Readonly<Record<string, PoolWorkerState>>
  readonly items: Readonly<Record<string, PoolItemState>>
  readonly runs: readonly PoolRun[]
  /** Steps checkpointed over the run (all items). */
  readonly checkpointed: number
  readonly failures: readonly string[]
}

/** What happened, as the coordinator saw it: a worker's report, or something it did itself. */
export type PoolAction =
  | { readonly type: 'spawned'; readonly worker: string; readonly role?: 'joined' }
  | { readonly type: 'report'; readonly worker: string; readonly event: PoolWorkerEvent }
  | {
      readonly type: 'signalled'
      readonly worker: string
      readonly signal: 'SIGTERM' | 'SIGKILL'
      readonly at: number
    }
  | {
      readonly type: 'exited'
      readonly worker: string
      readonly code: number | null
      readonly signal: string | null
      readonly expected: boolean
      readonly stderr?: string
    }
  /** The coordinator SIGKILLs a worker that had not exited `graceMs` after it was told to finish. */
  | { readonly type: 'forceKilled'; readonly worker: string; readonly graceMs: number }

/** A line for the log: `important` ones also show in the live view's recent events. */
export interface PoolLine {
  readonly text: string
  readonly important: boolean
}

const without = (list: readonly string[], item: string) => list.filter((entry) => entry !== item)

/**
 * The `--pool` coordinator's state changes, as a pure function: the state after an action, and the
 * lines to log. The coordinator does the I/O (forks, signals, IPC) and feeds what happens through here.
 */
export function reducePool(state: PoolState, action: PoolAction): { state: PoolState; lines: PoolLine[] } {
  const lines: PoolLine[] = []
  const log = (text: string, important = false) => lines.push({ text, important })
  const worker = state.workers[action.worker]
  const setWorker = (next: PoolWorkerState) => ({ ...state.workers, [next.name]: next })
  switch (action.type) {
    case 'spawned': {
      const next: PoolWorkerState = {
        name: action.worker,
        status: 'starting',
        items: [],
        taken: 0,
        consentTaken: 0,
        ...(action.role ? { role: action.role } : {}),
      }
      log(`${action.worker} started${action.role ? ' and joins the pool' : ''}`, action.role !== undefined)
      return { state: { ...state, workers: setWorker(next) }, lines }
    }
    case 'signalled': {
      if (!worker) return { state, lines }
      if (action.signal === 'SIGTERM') {
        log(`SIGTERM ${worker.name} holding ${worker.items.length} items: it leaves the pool cleanly`, true)
        return {
          state: {
            ...state,
            workers: setWorker({ ...worker, status: 'leaving', role: 'left', leavingAt: action.at }),
          },
          lines,
        }
      }
      log(
        `SIGKILL ${worker.name} holding ${worker.items.length} items: their leases are left to expire`,
        true,
      )
      // Its runs end now; its items are held by no one alive until a survivor takes them after the ttl.
      const runs = state.runs.map((run) =>
        run.worker === worker.name && !run.end
          ? { ...run, end: { at: action.at, how: 'killed' as const } }
          : run,
      )
      const items = { ...state.items }
      for (const id of worker.items) {
        const { holder: _gone, ...rest } = items[id]!
        items[id] = rest
      }
      return {
        state: {
          ...state,
          runs,
          items,
          workers: setWorker({ ...worker, status: 'killed', role: 'killed', items: [] }),
        },
        lines,
      }
    }
    case 'forceKilled': {
      if (!worker || ['left', 'killed', 'exited', 'failed'].includes(worker.status)) return { state, lines }
      const failure = `${worker.name} did not exit within ${action.graceMs} ms of being told to finish: SIGKILLed`
      log(failure, true)
      return {
        state: {
          ...state,
          failures: [...state.failures, failure],
          workers: setWorker({ ...worker, status: 'failed' }),
        },
        lines,
      }
    }
    case 'exited': {
      // A struck worker's exit is expected; a force-killed one's failure is already recorded.
      if (!worker || worker.status === 'killed' || worker.status === 'failed') return { state, lines }
      let status: PoolWorkerStatus = 'exited'
      let failures = state.failures
      if (worker.status === 'leaving' && action.code === 0 && !action.signal) {
        status = 'left'
        log(`${worker.name} left the pool`, true)
      } else if (worker.status === 'leaving') {
        // Told to leave cleanly, it did not: a leave that crashed is no clean leave.
        status = 'failed'
        const why = action.signal ? `signal ${action.signal}` : `code ${action.code}`
        failures = [
          ...failures,
          `${worker.name} did not leave cleanly (${why})${action.stderr ? `:\n${action.stderr}` : ''}`,
        ]
        log(`${worker.name} did not leave cleanly (${why})`, true)
      } else if (action.code !== 0 || !action.expected) {
        status = 'failed'
        const why = action.signal ? `signal ${action.signal}` : `code ${action.code}`
        failures = [
          ...failures,
          `${worker.name} exited unexpectedly (${why})${action.stderr ? `:\n${action.stderr}` : ''}`,
        ]
        log(`${worker.name} exited unexpectedly (${why})`, true)
      }
      return { state: { ...state, failures, workers: setWorker({ ...worker, status }) }, lines }
    }
    case 'report':
      if (!worker) return { state, lines }
      return reduceReport(state, worker, action.event)
  }
}

function reduceReport(
  state: PoolState,
  worker: PoolWorkerState,
  event: PoolWorkerEvent,
): { state: PoolState; lines: PoolLine[] } {
  const lines: PoolLine[] = []
  const say = (text: string, important = false) => lines.push({ text, important })
  const setWorker = (next: PoolWorkerState) => ({ ...state.workers, [next.name]: next })
  const done = (next: PoolState) => ({ state: next, lines })
  switch (event.type) {
    case 'ready':
      return done({
        ...state,
        workers: setWorker({
          ...worker,
          holderId: event.holderId,
          status: worker.status === 'starting' ? 'running' : worker.status,
        }),
      })
    case 'taken': {
      // A handler that threw runs again on the same lease: the same take.
      if (state.runs.some((run) => run.item === event.item && run.token === event.token)) return done(state)
      const item = state.items[event.item]!
      const moved = item.token > 0n
      const previous = item.holder ? state.workers[item.holder] : undefined
      const workers: Record<string, PoolWorkerState> = { ...state.workers }
      if (previous && previous.name !== worker.name)
        workers[previous.name] = { ...previous, items: without(previous.items, event.item) }
      workers[worker.name] = {
        ...worker,
        items: [...without(worker.items, event.item), event.item],
        taken: worker.taken + 1,
        consentTaken: worker.consentTaken + (moved && event.cleanHandoff ? 1 : 0),
      }
      const nextItem: PoolItemState = {
        ...item,
        holder: worker.name,
        token: event.token,
        stepsDone: event.stepsDone,
        moves: item.moves + (moved ? 1 : 0),
        clean: item.clean + (moved && event.cleanHandoff ? 1 : 0),
        unclean: item.unclean + (moved && !event.cleanHandoff ? 1 : 0),
      }
      const run: PoolRun = {
        item: event.item,
        worker: worker.name,
        token: event.token,
        cleanHandoff: event.cleanHandoff,
        resumedAt: event.stepsDone,
        checkpointed: event.stepsDone,
        startedAt: event.at,
      }
      if (moved) {
        const how = event.cleanHandoff ? 'clean handoff' : 'UNCLEAN handoff'
        say(
          `${worker.name} took ${event.item} token ${event.token} (${how}, resumes after step ${event.stepsDone}/${state.steps})`,
          !event.cleanHandoff,
        )
      }
      return done({
        ...state,
        workers,
        items: { ...state.items, [event.item]: nextItem },
        runs: [...state.runs, run],
      })
    }
    case 'checkpointed': {
      const item = state.items[event.item]!
      const runs = state.runs.map((run) =>
        run.item === event.item && run.token === event.token ? { ...run, checkpointed: event.step } : run,
      )
      return done({
        ...state,
        runs,
        checkpointed: state.checkpointed + 1,
        items:
          item.token === event.token
            ? { ...state.items, [event.item]: { ...item, stepsDone: event.step } }
            : state.items,
      })
    }
    case 'claimed':
      if (!event.accepted)
        say(`${worker.name} claim of ${event.item} with token ${event.token} REFUSED downstream`, true)
      return done(state)
    case 'refused':
      say(
        `${worker.name} write of ${event.item} step ${event.step} with token ${event.token} REJECTED by the fence`,
        true,
      )
      return done(state)
    case 'givingUp':
      say(`${worker.name} gives ${event.item} back`)
      return done(state)
    case 'ended': {
      // A report sent before a SIGKILL can arrive after it: its end, not the kill, is how the run ended.
      const runs = state.runs.map((run) =>
        run.item === event.item &&
        run.token === event.token &&
        (!run.end || (run.end.how === 'killed' && event.at <= run.end.at))
          ? { ...run, end: { at: event.at, how: event.how } }
          : run,
      )
      const item = state.items[event.item]!
      let items = state.items
      let workers = state.workers
      if (event.how === 'done') {
        items = { ...items, [event.item]: { ...item, done: true, stepsDone: event.stepsDone } }
        say(`${worker.name} finished ${event.item}`)
      }
      if (event.how !== 'consent') {
        // Done or lost: the item leaves this worker now (a consent give-up leaves at 'released').
        if (item.holder === worker.name && item.token === event.token) {
          const { holder: _gone, ...rest } = items[event.item]!
          items = { ...items, [event.item]: rest }
        }
        workers = setWorker({ ...worker, items: without(worker.items, event.item) })
        if (event.how === 'lost') say(`${worker.name} lost ${event.item} token ${event.token}`, true)
      }
      return done({ ...state, runs, items, workers })
    }
    case 'released': {
      const item = state.items[event.item]!
      const items =
        item.holder === worker.name
          ? (() => {
              const { holder: _gone, ...rest } = item
              return { ...state.items, [event.item]: rest }
            })()
          : state.items
      say(`${worker.name} released ${event.item}`)
      const runs = state.runs.map((run) =>
        run.item === event.item && run.worker === worker.name && run.end?.how === 'consent' && !run.released
          ? { ...run, released: true as const }
          : run,
      )
      return done({
        ...state,
        runs,
        items,
        workers: setWorker({ ...worker, items: without(worker.items, event.item) }),
      })
    }
    case 'rebalanceFailed':
      say(`${worker.name} rebalance failed (tries again next interval): ${event.message}`, true)
      return done(state)
    case 'membershipLost':
      say(`${worker.name} lost its membership lease (${event.reason}); it rejoins`, true)
      return done(state)
    case 'failed':
      say(`${worker.name} FAILED: ${event.message.split('\n')[0]}`, true)
      return done({ ...state, failures: [...state.failures, `${worker.name}: ${event.message}`] })
    case 'exiting':
      return done(state)
  }
}
