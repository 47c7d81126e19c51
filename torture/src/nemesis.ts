import type { FaultProxy } from './fault-proxy.js'
import { NETWORK_FAULTS, type NetworkFault } from './network-faults.js'
import type { ProcessFault } from './process-faults.js'
import { Random } from './random.js'
import type { ServerHandle } from './targets.js'
import type { WorkerFleet } from './worker-fleet.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** What the nemesis can break: the network (through the proxy), the server, the worker processes. */
export interface NemesisTargets {
  /** The fault proxy between workers and server; none for SQLite, which has no network. */
  proxy: FaultProxy | undefined
  server: ServerHandle
  fleet: WorkerFleet
  /** The backend computes expiry on its callers' clocks: clock faults apply. */
  clientClock: boolean
  /** The network faults to pick from (default: all). */
  networkFaults?: readonly NetworkFault[]
  /** The process faults to pick from (default: all; the clock faults only on a client clock). */
  processFaults?: readonly ProcessFault[]
}

/**
 * The fault schedule of one run: two lanes side by side, each injecting a fault every 0.2 to 0.9 s
 * (process faults every 0.1 to 0.4 s when there is no network to break). Its choices come from one
 * seeded stream, so a seed replays the schedule; what it has done so far is its state: faults by
 * kind, which slots it holds stopped, and the clock offset it gave each slot (a respawned slot keeps
 * it).
 */
export class Nemesis {
  /** Faults injected so far, by kind (the report's names). */
  readonly faults: Record<string, number> = {}
  readonly #random: Random
  readonly #targets: NemesisTargets
  readonly #paused = new Set<number>()
  readonly #offsets = new Map<number, number>()

  constructor(seed: number, targets: NemesisTargets) {
    this.#random = new Random(Random.derive(seed, 'nemesis'))
    this.#targets = targets
  }

  /** Injects faults until `running()` turns false. */
  run(running: () => boolean): Promise<void> {
    return Promise.all([this.#networkLane(running), this.#processLane(running)]).then(() => undefined)
  }

  /** Undoes every lasting fault: the proxy passes everything, stopped workers go on, clocks are true. */
  heal(): void {
    const { proxy, fleet } = this.#targets
    proxy?.setMode('pass')
    proxy?.setLatency(0)
    for (const slot of fleet.slots) {
      if (this.#paused.has(slot.index)) slot.child.kill('SIGCONT')
      fleet.send(slot, { type: 'clock', offset: 0 })
    }
  }

  #count(name: string): void {
    this.faults[name] = (this.faults[name] ?? 0) + 1
  }

  async #networkLane(running: () => boolean): Promise<void> {
    const random = this.#random
    const { proxy, server } = this.#targets
    while (running()) {
      await sleep(random.int(200, 900))
      if (!running() || !proxy) {
        if (!proxy) return
        break
      }
      const choices = (this.#targets.networkFaults ?? [...NETWORK_FAULTS]).map((kind) =>
        kind === 'restart' && !server.restart ? 'outage' : kind,
      )
      const kind = random.pick(choices)
      if (kind === 'drop') {
        this.#count('proxy: drop connections')
        proxy.dropConnections()
      } else if (kind === 'blackhole') {
        this.#count('proxy: black-hole')
        proxy.setMode('blackhole')
        await sleep(random.int(200, 1_500))
        proxy.setMode('pass')
      } else if (kind === 'latency') {
        this.#count('proxy: latency')
        proxy.setLatency(random.int(10, 150))
        await sleep(random.int(300, 1_500))
        proxy.setLatency(0)
      } else if (kind === 'drop-replies') {
        this.#count('proxy: forward request, drop reply')
        proxy.setMode('drop-replies')
        await sleep(random.int(20, 200))
        proxy.setMode('pass')
      } else if (kind === 'late-delivery') {
        // What the cut-off clients send after the window overtakes what was held; soon enough that
        // a held request usually still finds its lease held (holders keep one ~100 ms), where an
        // old checkpoint or renew can do harm.
        this.#count('proxy: deliver requests late, after the client gave up')
        proxy.setLateDelivery(random.int(30, 300))
        proxy.setMode('late-delivery')
        await sleep(random.int(20, 150))
        proxy.setMode('pass')
      } else if (kind === 'restart') {
        this.#count('server restart (SIGKILL + start)')
        await server.restart!()
      } else {
        this.#count('server outage (long black-hole)')
        proxy.setMode('blackhole')
        await sleep(random.int(2_000, 4_000))
        proxy.setMode('pass')
      }
    }
  }

  async #processLane(running: () => boolean): Promise<void> {
    const random = this.#random
    const { proxy, fleet, clientClock } = this.#targets
    while (running()) {
      // Without a proxy (SQLite) process faults are all there is: inject them more often.
      await sleep(proxy ? random.int(200, 900) : random.int(100, 400))
      if (!running()) break
      const slot = random.pick(fleet.slots)
      const all: ProcessFault[] = [
        'pause',
        'kill',
        ...(clientClock ? (['clock-skew', 'clock-jump'] as const) : []),
      ]
      const kinds = this.#targets.processFaults
        ? all.filter((k) => this.#targets.processFaults!.includes(k))
        : all
      const kind = random.pick(kinds)
      const paused = this.#paused.has(slot.index)
      if (kind === 'pause' && !paused) {
        this.#count('SIGSTOP/SIGCONT worker')
        this.#paused.add(slot.index)
        slot.child.kill('SIGSTOP')
        await sleep(random.pick([random.int(250, 600), random.int(2_100, 3_000)]))
        slot.child.kill('SIGCONT')
        this.#paused.delete(slot.index)
      } else if (kind === 'kill' && !paused) {
        this.#count('SIGKILL worker (respawn)')
        slot.child.kill('SIGKILL')
        await slot.exited
        await sleep(random.int(20, 200))
        const fresh = await fleet.respawn(slot)
        fleet.send(fresh, { type: 'clock', offset: this.#offsets.get(slot.index) ?? 0 })
      } else if (kind === 'clock-skew') {
        this.#count('clock offset')
        this.#setOffset(slot.index, random.int(-400, 400))
      } else if (kind === 'clock-jump') {
        this.#count('clock jump (and back)')
        const before = this.#offsets.get(slot.index) ?? 0
        this.#setOffset(slot.index, before + random.pick([-1, 1]) * random.int(1_000, 3_000))
        await sleep(random.int(200, 1_000))
        this.#setOffset(slot.index, before)
      }
    }
  }

  /** Gives a slot's worker an injected clock offset (the live incarnation, whichever it is now). */
  #setOffset(index: number, offset: number): void {
    this.#offsets.set(index, offset)
    this.#targets.fleet.send(this.#targets.fleet.slots[index]!, { type: 'clock', offset })
  }
}
