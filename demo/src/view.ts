import type { Coordinator, LogLine } from './coordinator.js'
import { bold, cyan, dim, fit, green, LiveFrame, red, stamp, yellow } from './live-frame.js'
import type { DemoOptions } from './options.js'
import type { WorkerState } from './reduce-run.js'

/** How the run is shown: a live redrawn view on a terminal, plain lines otherwise. */
export interface View {
  line(line: LogLine): void
  start(coordinator: Coordinator): void
  stop(): void
}

/** One line per event, for CI logs and pipes. */
export class PlainView implements View {
  readonly #write: (text: string) => void

  constructor(write: (text: string) => void) {
    this.#write = write
  }

  line(line: LogLine): void {
    this.#write(`${stamp(line.at)}  ${line.text}\n`)
  }

  start(): void {}
  stop(): void {}
}

function statusText(worker: WorkerState): string {
  const label = worker.status.toUpperCase().padEnd(8)
  switch (worker.status) {
    case 'working':
      return green(label)
    case 'killed':
    case 'failed':
      return red(label)
    case 'paused':
    case 'stopping':
      return yellow(label)
    case 'stopped':
    case 'exited':
      return dim(label)
    default:
      return label
  }
}

/**
 * The live terminal view: the whole frame is redrawn in place ten times a second (cursor up, clear
 * to the end), one line per worker and per item, then the most recent notable events.
 */
export class LiveView implements View {
  readonly #frame: LiveFrame
  readonly #options: DemoOptions
  readonly #title: string
  #coordinator: Coordinator | undefined

  constructor(out: NodeJS.WriteStream, options: DemoOptions, title: string) {
    this.#frame = new LiveFrame(out, (width, rows) => this.#render(width, rows))
    this.#options = options
    this.#title = title
  }

  line(line: LogLine): void {
    this.#frame.note(line)
  }

  start(coordinator: Coordinator): void {
    this.#coordinator = coordinator
    this.#frame.start()
  }

  stop(): void {
    this.#frame.stop()
  }

  #render(width: number, rows: number): string[] | undefined {
    const coordinator = this.#coordinator
    if (!coordinator) return undefined
    const steps = this.#options.steps
    const lines: string[] = []
    lines.push(
      `${bold(this.#title)}  ${dim(`${(coordinator.elapsed() / 1000).toFixed(1)} s, ${Math.round(coordinator.progress * 100)}% of steps done`)}`,
    )
    lines.push(dim('worker  status    item       token  step   '))
    for (const worker of Object.values(coordinator.state.workers)) {
      let holding = worker.item
        ? `${worker.item.padEnd(9)}  ${String(worker.token).padStart(5)}  ${String(worker.step ?? 0).padStart(2)}/${steps}`
        : ''
      // A killed worker's lease lingers until it expires; show it, greyed out.
      if (holding && worker.status === 'killed') holding = dim(holding)
      const note = worker.role
        ? yellow(`  ${worker.role}`)
        : worker.replaces
          ? dim(`  replaces ${worker.replaces}`)
          : ''
      lines.push(`${worker.name.padEnd(6)}  ${statusText(worker)}  ${holding}${note}`)
    }
    lines.push(dim('item       holder  token  steps          handoffs'))
    const itemLines: string[] = []
    for (const item of Object.values(coordinator.state.items)) {
      const bar = '█'.repeat(item.stepsDone) + dim('·'.repeat(Math.max(0, steps - item.stepsDone)))
      const holder = item.done ? green('done') : (item.holder ?? dim('-'))
      const unclean = item.unclean > 0 ? red(` (${item.unclean} unclean)`) : ''
      itemLines.push(
        `${item.id.padEnd(9)}  ${fit(holder, 6)}  ${String(item.token).padStart(5)}  ${fit(`${bar} ${item.stepsDone}/${steps}`, 13)}  ${item.handoffs}${unclean}`,
      )
    }
    // Items go side by side when the terminal is too short for one per line.
    const recentRows = 5
    const room = Math.max(4, rows - lines.length - recentRows - 1)
    const columns = Math.min(3, Math.ceil(itemLines.length / room))
    const perColumn = Math.ceil(itemLines.length / columns)
    const columnWidth = Math.floor(width / columns)
    for (let row = 0; row < perColumn; row++) {
      let text = ''
      for (let column = 0; column < columns; column++) {
        const entry = itemLines[column * perColumn + row]
        if (entry) text += fit(entry, columnWidth - 2) + '  '
      }
      lines.push(text)
    }
    lines.push(dim('recent'))
    const recent = this.#frame.recent.slice(-recentRows)
    for (const entry of recent) lines.push(`${dim(stamp(entry.at))}  ${highlight(entry.text)}`)
    for (let i = recent.length; i < recentRows; i++) lines.push('')
    return lines
  }
}

function highlight(text: string): string {
  return text
    .replace(/^(SIGKILL|SIGSTOP|SIGCONT|SIGTERM)/, (signal) =>
      signal === 'SIGKILL' ? red(signal) : yellow(signal),
    )
    .replace(/(REJECTED by the fence|clean handoff)/, (match) => green(match))
    .replace(/(UNCLEAN handoff|ACCEPTED \(no fence\)|REFUSED downstream|FAILED)/, (match) => red(match))
    .replace(/(token \d+)/, (match) => cyan(match))
}
