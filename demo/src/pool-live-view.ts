import type { LogLine } from './coordinator.js'
import type { PoolCoordinator } from './pool-coordinator.js'
import { poolSummary } from './pool-summary.js'

const ESC = '\x1b['
const paint = (code: number, text: string) => `${ESC}${code}m${text}${ESC}0m`
const stamp = (ms: number) => `${(ms / 1000).toFixed(2).padStart(6)}s`

/**
 * The `--pool` live view, redrawn ten times a second: a line per worker with its items as blocks
 * (so items visibly flow from one worker to another), the moves and handoffs so far, and the recent
 * notable events.
 */
export class PoolLiveView {
  readonly #out: NodeJS.WriteStream
  readonly #title: string
  readonly #recent: LogLine[] = []
  #coordinator: PoolCoordinator | undefined
  #timer: ReturnType<typeof setInterval> | undefined
  #drawn = 0

  constructor(out: NodeJS.WriteStream, title: string) {
    this.#out = out
    this.#title = title
  }

  line(line: LogLine): void {
    if (!line.important) return
    this.#recent.push(line)
    if (this.#recent.length > 50) this.#recent.shift()
  }

  start(coordinator: PoolCoordinator): void {
    this.#coordinator = coordinator
    this.#out.write(`${ESC}?25l`)
    process.once('exit', () => this.#out.write(`${ESC}?25h`))
    this.#timer = setInterval(() => this.#draw(), 100)
    this.#draw()
  }

  stop(): void {
    clearInterval(this.#timer)
    this.#draw()
    this.#out.write(`${ESC}?25h`)
  }

  #draw(): void {
    const coordinator = this.#coordinator
    if (!coordinator) return
    const width = Math.max(40, (this.#out.columns ?? 100) - 1)
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
    const recent = this.#recent.slice(-6)
    for (const entry of recent) lines.push(`${paint(2, stamp(entry.at))}  ${entry.text}`)
    for (let i = recent.length; i < 6; i++) lines.push('')
    // biome-ignore lint/suspicious/noControlCharactersInRegex: measuring the escape sequences we emit
    const visible = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '').length
    const frame = lines
      .map((line) => (visible(line) > width ? line.slice(0, width) : line))
      .join(`${ESC}0K\n`)
    const up = this.#drawn > 0 ? `${ESC}${this.#drawn}A\r${ESC}0J` : ''
    this.#out.write(`${up}${frame}\n`)
    this.#drawn = lines.length
  }
}
