import type { LogLine } from './coordinator.js'
import { LiveFrame, color as paint, stamp } from './live-frame.js'
import type { PoolCoordinator } from './pool-coordinator.js'
import { poolSummary } from './pool-summary.js'

/**
 * The `--pool` live view, redrawn ten times a second: a line per worker with its items as blocks
 * (so items visibly flow from one worker to another), the moves and handoffs so far, and the recent
 * notable events.
 */
export class PoolLiveView {
  readonly #frame: LiveFrame
  readonly #title: string
  #coordinator: PoolCoordinator | undefined

  constructor(out: NodeJS.WriteStream, title: string) {
    this.#frame = new LiveFrame(out, () => this.#render())
    this.#title = title
  }

  line(line: LogLine): void {
    this.#frame.note(line)
  }

  start(coordinator: PoolCoordinator): void {
    this.#coordinator = coordinator
    this.#frame.start()
  }

  stop(): void {
    this.#frame.stop()
  }

  #render(): string[] | undefined {
    const coordinator = this.#coordinator
    if (!coordinator) return undefined
    const { state } = coordinator
    const lines = [
      `${paint(1, this.#title)}  ${paint(2, `${(coordinator.elapsed() / 1000).toFixed(1)} s, ${Math.round(coordinator.progress * 100)}% of steps done`)}`,
      paint(2, 'worker  status    items'),
    ]
    for (const worker of Object.values(state.workers)) {
      const status = worker.status.toUpperCase().padEnd(8)
      const colored =
        worker.status === 'running'
          ? paint(32, status)
          : worker.status === 'killed' || worker.status === 'failed'
            ? paint(31, status)
            : worker.status === 'leaving' || worker.status === 'starting'
              ? paint(33, status)
              : paint(2, status)
      const role = worker.role ? paint(33, ` ${worker.role}`) : ''
      lines.push(
        `${worker.name.padEnd(6)}  ${colored}  ${String(worker.items.length).padStart(3)} ${'█'.repeat(worker.items.length)}${role}`,
      )
    }
    lines.push('', poolSummary(state), paint(2, 'recent'))
    const recent = this.#frame.recent.slice(-6)
    for (const entry of recent) lines.push(`${paint(2, stamp(entry.at))}  ${entry.text}`)
    for (let i = recent.length; i < 6; i++) lines.push('')
    return lines
  }
}
