import type { WorkerEvent } from './protocol.js'

export type WorkerStatus =
  | 'starting'
  | 'idle'
  | 'working'
  | 'paused'
  | 'stopping'
  | 'killed'
  | 'stopped'
  | 'exited'
  | 'failed'

export type StrikeAction = 'crash' | 'pause' | 'stop'

export interface WorkerState {
  readonly name: string
  readonly holderId?: string
  readonly status: WorkerStatus
  readonly item?: string
  readonly token?: bigint
  readonly step?: number
  readonly role?: StrikeAction
  /** The worker this one replaced (after a crash or a graceful stop). */
  readonly replaces?: string
}

export interface ItemState {
  readonly id: string
  readonly holder?: string
  readonly token: bigint
  readonly stepsDone: number
  /** Acquisitions after the first, i.e. how often the item changed hands. */
  readonly handoffs: number
  readonly unclean: number
  readonly done: boolean
}

/** The next holder of a struck worker's item, as it reported itself. */
export interface Handoff {
  readonly worker: string
  readonly token: bigint
  readonly cleanHandoff: boolean
  readonly stepsDone: number
}

/** What the coordinator did to a worker, and what followed. */
export interface Strike {
  readonly action: StrikeAction
  readonly worker: string
  readonly item: string
  readonly token: bigint
  /** The step the worker was in the middle of. */
  readonly step: number
  readonly at: number
  readonly handoff?: Handoff
  /** pause: when SIGCONT was sent, and who had claimed the item downstream by then. */
  readonly resumedAt?: number
  readonly claimedBy?: { readonly worker: string; readonly token: bigint }
  /** pause: the writes the worker attempted with its old token after it was resumed. */
  readonly lateWrites: readonly { readonly step: number; readonly accepted: boolean }[]
}

export interface PlannedStrike {
  readonly action: StrikeAction
  /** Fraction of all steps checkpointed at which the strike is armed. */
  readonly atProgress: number
  readonly target?: string
  readonly strike?: Strike
}

export interface RunState {
  readonly steps: number
  readonly stepMs: number
  readonly ttlMs: number
  /** The memory store's workers run in-process: their "signals" are simulated. */
  readonly simulated: boolean
  readonly workers: Readonly<Record<string, WorkerState>>
  readonly items: Readonly<Record<string, ItemState>>
  readonly plan: readonly PlannedStrike[]
  /** Steps checkpointed over the run (all items). */
  readonly checkpointed: number
  readonly failures: readonly string[]
  readonly finishing: boolean
}

/** What happened, as the coordinator saw it: a worker's report, the clock, or something it did itself. */
export type RunAction =
  | { readonly type: 'spawned'; readonly worker: string; readonly pid?: number; readonly replaces?: string }
  /** `ageMs`: how long the report took to arrive (a strike lands only early in a step). */
  | {
      readonly type: 'report'
      readonly worker: string
      readonly event: WorkerEvent
      readonly at: number
      readonly ageMs: number
    }
  | { readonly type: 'tick'; readonly at: number }
  | {
      readonly type: 'exited'
      readonly worker: string
      readonly code: number | null
      readonly signal: string | null
      readonly stderr?: string
    }
  | { readonly type: 'finishing'; readonly timedOut: boolean }
  /** The coordinator SIGKILLs a worker that had not exited `graceMs` after it was told to finish. */
  | { readonly type: 'forceKilled'; readonly worker: string; readonly graceMs: number }

/** The I/O a state change asks of the coordinator. */
export type RunEffect =
  | { readonly type: 'itemDone'; readonly item: string }
  | { readonly type: 'strike'; readonly worker: string; readonly action: StrikeAction }
  | { readonly type: 'resume'; readonly worker: string }
  /** Start a new worker in place of one that left (a supervisor restarting it). */
  | { readonly type: 'replace'; readonly worker: string }

/** A line for the log: `important` ones also show in the live view's recent events. */
export interface RunLine {
  readonly text: string
  readonly important: boolean
}

export interface RunStep {
  readonly state: RunState
  readonly lines: RunLine[]
  readonly effects: RunEffect[]
}

const LEFT: readonly WorkerStatus[] = ['killed', 'stopped', 'exited', 'failed']

/** Every item fresh, no workers yet, the strikes planned but not armed. */
export function initialRunState(options: {
  items: readonly string[]
  steps: number
  stepMs: number
  ttlMs: number
  simulated: boolean
  plan: readonly PlannedStrike[]
}): RunState {
  const { items, ...rest } = options
  return {
    ...rest,
    workers: {},
    items: Object.fromEntries(
      items.map((id) => [id, { id, token: 0n, stepsDone: 0, handoffs: 0, unclean: 0, done: false }]),
    ),
    checkpointed: 0,
    failures: [],
    finishing: false,
  }
}

/** Fraction of all steps checkpointed so far. */
export function progressOf(state: RunState): number {
  return state.checkpointed / (Object.keys(state.items).length * state.steps)
}

/** Workers that have not left (for the finish and for Ctrl-C). */
export function liveWorkers(state: RunState): WorkerState[] {
  return Object.values(state.workers).filter((worker) => !LEFT.includes(worker.status))
}

/**
 * Whether the run can end: every item done, and the paused worker (if any) resumed and given 2 s to
 * make its late write, which is what the audit's fence check looks at.
 */
export function readyToFinish(state: RunState, at: number): boolean {
  if (state.finishing || !Object.values(state.items).every((item) => item.done)) return false
  const pause = strikeOf(state, 'pause')
  if (!pause || pause.lateWrites.length > 0) return true
  return pause.resumedAt !== undefined && at - pause.resumedAt >= 2_000
}

export function strikeOf(state: RunState, action: StrikeAction): Strike | undefined {
  return state.plan.find((planned) => planned.action === action)?.strike
}

/**
 * Picks a target for every strike whose moment has come, among the busy workers; `pick` is the seeded
 * choice, so the same seed strikes the same workers.
 */
export function armStrikes(state: RunState, pick: (names: string[]) => string): RunState {
  let plan = state.plan
  for (const [index, planned] of plan.entries()) {
    if (planned.strike || progressOf(state) < planned.atProgress) continue
    const current = planned.target ? state.workers[planned.target] : undefined
    if (current?.status === 'working') continue
    const eligible = Object.values(state.workers)
      .filter((worker) => worker.status === 'working' && !worker.role)
      .map((worker) => worker.name)
      .filter((name) => !plan.some((other) => other !== planned && other.target === name))
      .sort()
    if (eligible.length === 0) continue
    plan = plan.with(index, { ...planned, target: pick(eligible) })
  }
  return plan === state.plan ? state : { ...state, plan }
}

/**
 * The demo coordinator's state changes, as a pure function: the state after an action, the lines to
 * log, and the I/O to do. The coordinator forks, signals and messages workers and feeds what happens
 * through here.
 */
export function reduceRun(state: RunState, action: RunAction): RunStep {
  switch (action.type) {
    case 'spawned':
      return spawned(state, action)
    case 'report':
      return reported(state, action)
    case 'tick':
      return ticked(state, action.at)
    case 'exited':
      return exited(state, action)
    case 'forceKilled':
      return forceKilled(state, action)
    case 'finishing':
      return {
        state: { ...state, finishing: true },
        lines: [
          {
            text: action.timedOut
              ? 'stopping every worker'
              : 'every item is done: telling the workers to finish',
            important: false,
          },
        ],
        effects: [],
      }
  }
}

function spawned(state: RunState, action: Extract<RunAction, { type: 'spawned' }>): RunStep {
  const worker: WorkerState = {
    name: action.worker,
    status: 'starting',
    ...(action.replaces ? { replaces: action.replaces } : {}),
  }
  const pid = action.pid ? ` (pid ${action.pid})` : ''
  const replacing = action.replaces ? `, replacing ${action.replaces}` : ''
  return {
    state: withWorker(state, worker),
    lines: [{ text: `${action.worker} started${pid}${replacing}`, important: false }],
    effects: [],
  }
}

function withWorker(state: RunState, worker: WorkerState): RunState {
  return { ...state, workers: { ...state.workers, [worker.name]: worker } }
}

function withItem(state: RunState, item: ItemState): RunState {
  return { ...state, items: { ...state.items, [item.id]: item } }
}

function withStrike(state: RunState, action: StrikeAction, change: (strike: Strike) => Strike): RunState {
  return {
    ...state,
    plan: state.plan.map((planned) =>
      planned.action === action && planned.strike ? { ...planned, strike: change(planned.strike) } : planned,
    ),
  }
}

function holding(worker: WorkerState, item: string, token: bigint, step: number): WorkerState {
  const status = worker.status === 'idle' || worker.status === 'starting' ? 'working' : worker.status
  return { ...worker, item, token, step, status }
}

function notHolding(worker: WorkerState, item: string, token: bigint): WorkerState {
  if (worker.item !== item || worker.token !== token) return worker
  const { item: _item, token: _token, step: _step, ...rest } = worker
  return { ...rest, status: worker.status === 'working' ? 'idle' : worker.status }
}

function reported(state: RunState, action: Extract<RunAction, { type: 'report' }>): RunStep {
  const lines: RunLine[] = []
  const effects: RunEffect[] = []
  const log = (text: string, important: boolean) => lines.push({ text, important })
  const name = action.worker
  const worker = state.workers[name]
  if (!worker) return { state, lines, effects }
  const event = action.event
  let next = state
  switch (event.type) {
    case 'ready':
      next = withWorker(state, {
        ...worker,
        holderId: event.holderId,
        status: worker.status === 'starting' ? 'idle' : worker.status,
      })
      break
    case 'acquired': {
      const item = state.items[event.item]!
      if (event.stepsDone >= state.steps) {
        // It had not heard yet that the item is done (a late message): it just releases it again.
        log(`${name} found ${event.item} already done (token ${event.token})`, false)
        break
      }
      const handoffs = item.token > 0n ? item.handoffs + 1 : item.handoffs
      next = withItem(state, {
        ...item,
        handoffs,
        unclean: event.cleanHandoff ? item.unclean : item.unclean + 1,
        holder: name,
        token: event.token,
        stepsDone: event.stepsDone,
      })
      next = withWorker(next, holding(worker, event.item, event.token, event.stepsDone))
      next = {
        ...next,
        plan: next.plan.map((planned) => {
          const strike = planned.strike
          if (!strike || strike.handoff || strike.item !== event.item || event.token <= strike.token) {
            return planned
          }
          const { token, cleanHandoff, stepsDone } = event
          return {
            ...planned,
            strike: { ...strike, handoff: { worker: name, token, cleanHandoff, stepsDone } },
          }
        }),
      }
      const how = handoffs === 0 ? 'first lease' : event.cleanHandoff ? 'clean handoff' : 'UNCLEAN handoff'
      log(
        `${name} acquired ${event.item} token ${event.token} (${how}, ${event.stepsDone}/${state.steps} steps done)`,
        !event.cleanHandoff,
      )
      break
    }
    case 'claimed': {
      if (!event.accepted) {
        log(`${name} claim of ${event.item} with token ${event.token} REFUSED downstream`, true)
        break
      }
      const pause = strikeOf(state, 'pause')
      if (pause && !pause.claimedBy && pause.item === event.item && event.token > pause.token) {
        next = withStrike(state, 'pause', (strike) => ({
          ...strike,
          claimedBy: { worker: name, token: event.token },
        }))
      }
      break
    }
    case 'step': {
      const stepping = { ...holding(worker, event.item, event.token, event.step - 1), step: event.step }
      return struck(withWorker(state, stepping), stepping, event.step, action)
    }
    case 'wrote': {
      const pause = strikeOf(state, 'pause')
      const late = pause?.worker === name && pause.token === event.token && pause.item === event.item
      if (late) {
        next = withStrike(state, 'pause', (strike) => ({
          ...strike,
          lateWrites: [...strike.lateWrites, { step: event.step, accepted: event.accepted }],
        }))
      }
      if (!event.accepted) {
        log(
          `${name} late write of ${event.item} step ${event.step} with token ${event.token} REJECTED by the fence`,
          true,
        )
      } else if (late && pause.resumedAt) {
        log(
          `${name} late write of ${event.item} step ${event.step} with token ${event.token} ACCEPTED (no fence)`,
          true,
        )
      }
      break
    }
    case 'checkpointed': {
      const item = state.items[event.item]!
      if (item.token === event.token) next = withItem(state, { ...item, stepsDone: event.step })
      next = { ...next, checkpointed: next.checkpointed + 1 }
      log(
        `${name} ${event.item} token ${event.token} step ${event.step}/${state.steps} written and checkpointed`,
        false,
      )
      break
    }
    case 'done': {
      const { holder: _holder, ...item } = state.items[event.item]!
      next = withItem(state, { ...item, done: true })
      log(`${name} finished ${event.item}`, false)
      effects.push({ type: 'itemDone', item: event.item })
      break
    }
    case 'lost':
      log(`${name} lost ${event.item} token ${event.token} (${event.reason})`, true)
      next = withWorker(state, notHolding(worker, event.item, event.token))
      break
    case 'released': {
      const item = state.items[event.item]!
      if (item.holder === name && item.token === event.token) {
        const { holder: _holder, ...free } = item
        next = withItem(state, free)
      }
      next = withWorker(next, notHolding(worker, event.item, event.token))
      if (!item.done) log(`${name} released ${event.item} token ${event.token}`, true)
      break
    }
    case 'failed':
      next = { ...state, failures: [...state.failures, `${name}: ${event.message}`] }
      log(`${name} FAILED: ${event.message.split('\n')[0]}`, true)
      break
    case 'exiting':
      break
  }
  return { state: next, lines, effects }
}

/** Strikes at the start of a step, while the worker sleeps through the step's work with no I/O. */
function struck(
  state: RunState,
  worker: WorkerState,
  step: number,
  report: Extract<RunAction, { type: 'report' }>,
): RunStep {
  const nothing: RunStep = { state, lines: [], effects: [] }
  const index = state.plan.findIndex((candidate) => candidate.target === worker.name && !candidate.strike)
  const planned = state.plan[index]
  if (!planned || worker.status !== 'working' || state.finishing) return nothing
  // On a busy machine the report can arrive late; strike only while the step's work surely goes on
  // (it takes at least 3/4 of --step-ms), so the signal lands before the write, never after it.
  if (report.ageMs > state.stepMs / 4) return nothing
  // A graceful stop in the last step would leave no one to hand over to: let another worker be picked.
  if (planned.action === 'stop' && step >= state.steps) {
    const { target: _target, ...untargeted } = planned
    return { ...nothing, state: { ...state, plan: state.plan.with(index, untargeted) } }
  }
  const strike: Strike = {
    action: planned.action,
    worker: worker.name,
    item: worker.item!,
    token: worker.token!,
    step,
    at: report.at,
    lateWrites: [],
  }
  const status = ({ crash: 'killed', pause: 'paused', stop: 'stopping' } as const)[planned.action]
  let next: RunState = { ...state, plan: state.plan.with(index, { ...planned, strike }) }
  next = withWorker(next, { ...worker, role: planned.action, status })
  const where = `holding ${strike.item} token ${strike.token} in step ${step}${state.simulated ? ' (simulated in-process)' : ''}`
  const text = {
    crash: `SIGKILL ${worker.name} ${where}: its lease is left to expire`,
    pause: `SIGSTOP ${worker.name} ${where}: it will sleep past its ttl`,
    stop: `SIGTERM ${worker.name} ${where}: it finishes the step, releases, exits`,
  }[planned.action]
  const effects: RunEffect[] = [{ type: 'strike', worker: worker.name, action: planned.action }]
  // A supervisor restarts crashed workers.
  if (planned.action === 'crash') effects.push({ type: 'replace', worker: worker.name })
  return { state: next, lines: [{ text, important: true }], effects }
}

/** Resumes the paused worker once its ttl has passed and a successor has claimed its item downstream. */
function ticked(state: RunState, at: number): RunStep {
  const nothing: RunStep = { state, lines: [], effects: [] }
  const pause = strikeOf(state, 'pause')
  if (!pause || pause.resumedAt !== undefined || state.finishing) return nothing
  const pausedFor = at - pause.at
  const takenOver = pause.claimedBy !== undefined || state.items[pause.item]!.done
  // Bounded, in case no one takes over (then the audit says so).
  if (!(pausedFor >= state.ttlMs && takenOver) && pausedFor < 4 * state.ttlMs + 10_000) return nothing
  let next = withStrike(state, 'pause', (strike) => ({ ...strike, resumedAt: at }))
  next = withWorker(next, { ...next.workers[pause.worker]!, status: 'working' })
  const by = pause.claimedBy
    ? `${pause.claimedBy.worker} holds token ${pause.claimedBy.token}`
    : 'no one took over'
  return {
    state: next,
    lines: [
      {
        text: `SIGCONT ${pause.worker} after ${(pausedFor / 1000).toFixed(1)} s (${by}); it still thinks it holds token ${pause.token}`,
        important: true,
      },
    ],
    effects: [{ type: 'resume', worker: pause.worker }],
  }
}

/** A worker that hung instead of finishing: a failure of the run, recorded before the kill lands. */
function forceKilled(state: RunState, action: Extract<RunAction, { type: 'forceKilled' }>): RunStep {
  const worker = state.workers[action.worker]
  if (!worker || LEFT.includes(worker.status)) return { state, lines: [], effects: [] }
  const { item: _item, token: _token, step: _step, ...rest } = worker
  const failure = `${worker.name} did not exit within ${action.graceMs} ms of being told to finish: SIGKILLed`
  return {
    state: { ...withWorker(state, { ...rest, status: 'failed' }), failures: [...state.failures, failure] },
    lines: [{ text: failure, important: true }],
    effects: [],
  }
}

function exited(state: RunState, action: Extract<RunAction, { type: 'exited' }>): RunStep {
  const worker = state.workers[action.worker]
  // A struck worker's exit is expected; a force-killed one's failure is already recorded.
  if (!worker || worker.status === 'killed' || worker.status === 'failed')
    return { state, lines: [], effects: [] }
  const lines: RunLine[] = []
  const effects: RunEffect[] = []
  const { item: _item, token: _token, step: _step, ...rest } = worker
  let status: WorkerStatus
  let failures = state.failures
  if (worker.status === 'stopping') {
    status = 'stopped'
    lines.push({ text: `${worker.name} stopped gracefully`, important: true })
    if (!state.finishing) effects.push({ type: 'replace', worker: worker.name })
  } else if (action.code === 0 && state.finishing) {
    status = 'exited'
  } else {
    status = 'failed'
    const why = action.signal ? `signal ${action.signal}` : `code ${action.code}`
    failures = [
      ...failures,
      `${worker.name} exited unexpectedly (${why})${action.stderr ? `:\n${action.stderr}` : ''}`,
    ]
    lines.push({ text: `${worker.name} exited unexpectedly (${why})`, important: true })
    if (!state.finishing) effects.push({ type: 'replace', worker: worker.name })
  }
  return { state: { ...withWorker(state, { ...rest, status }), failures }, lines, effects }
}
