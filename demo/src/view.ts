import type { Coordinator, LogLine } from './coordinator.js'
import type { DemoOptions } from './options.js'
import type { WorkerState } from './reduce-run.js'

/** How the run is shown: a live redrawn view on a terminal, plain lines otherwise. */
export interface View {
  line(line: LogLine): void
  start(coordinator: Coordinator): void
  stop(): void
}

const stamp = (ms: number) => `${(ms / 1000).toFixed(2).padStart(6)}s`

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

const ESC = '\x1b['
const color = (code: number, text: string) => `${ESC}${code}m${text}${ESC}0m`
const red = (text: string) => color(31, text)
const green = (text: string) => color(32, text)
const yellow = (text: string) => color(33, text)
const cyan = (text: string) => color(36, text)
const dim = (text: string) => color(2, text)
const bold = (text: string) => color(1, text)

// Visible width of a string with ANSI colour codes.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching the escape sequences we emit
const visible = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '')

function fit(text: string, width: number): string {
  const pad = width - visible(text).length
  return pad >= 0 ? text + ' '.repeat(pad) : cutVisible(text, width)
}

function cutVisible(text: string, width: number): string {
  let out = ''
  let count = 0
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching the escape sequences we emit
  for (const part of text.split(/(\x1b\[[0-9;]*m)/)) {
    if (part.startsWith('\x1b[')) {
      out += part
      continue
    }
    const room = width - count
    if (room <= 0) continue
    out += part.slice(0, room)
    count += Math.min(room, part.length)
  }
  return `${out}${ESC}0m`
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
  readonly #out: NodeJS.WriteStream
  readonly #options: DemoOptions
  readonly #title: string
  readonly #recent: LogLine[] = []
  #coordinator: Coordinator | undefined
  #timer: ReturnType<typeof setInterval> | undefined
  #drawn = 0

  constructor(out: NodeJS.WriteStream, options: DemoOptions, title: string) {
    this.#out = out
    this.#options = options
    this.#title = title
  }

  line(line: LogLine): void {
    if (!line.important) return
    this.#recent.push(line)
    if (this.#recent.length > 50) this.#recent.shift()
  }

  start(coordinator: Coordinator): void {
    this.#coordinator = coordinator
    this.#out.write(`${ESC}?25l`)
    const restore = () => this.#out.write(`${ESC}?25h`)
    process.once('exit', restore)
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
    const rows = Math.max(12, (this.#out.rows ?? 40) - 1)
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
    const recent = this.#recent.slice(-recentRows)
    for (const entry of recent) lines.push(`${dim(stamp(entry.at))}  ${highlight(entry.text)}`)
    for (let i = recent.length; i < recentRows; i++) lines.push('')
    const frame = lines.map((line) => fit(line, width)).join('\n')
    const up = this.#drawn > 0 ? `${ESC}${this.#drawn}A\r${ESC}0J` : ''
    this.#out.write(`${up}${frame}\n`)
    this.#drawn = lines.length
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
