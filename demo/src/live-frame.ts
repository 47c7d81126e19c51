import type { LogLine } from './coordinator.js'

const ESC = '\x1b['

export const color = (code: number, text: string) => `${ESC}${code}m${text}${ESC}0m`
export const red = (text: string) => color(31, text)
export const green = (text: string) => color(32, text)
export const yellow = (text: string) => color(33, text)
export const cyan = (text: string) => color(36, text)
export const dim = (text: string) => color(2, text)
export const bold = (text: string) => color(1, text)
export const stamp = (ms: number) => `${(ms / 1000).toFixed(2).padStart(6)}s`

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching the escape sequences we emit
const ANSI = /(\x1b\[[0-9;]*m)/

/** `text` padded or cut to `width` visible columns, its colour codes kept. */
export function fit(text: string, width: number): string {
  let out = ''
  let count = 0
  for (const part of text.split(ANSI)) {
    if (part.startsWith(ESC)) {
      out += part
      continue
    }
    const room = width - count
    if (room <= 0) continue
    out += part.slice(0, room)
    count += Math.min(room, part.length)
  }
  return `${out}${' '.repeat(width - count)}${ESC}0m`
}

/**
 * What both live views share: a frame redrawn in place ten times a second (cursor up, clear to the
 * end), the cursor hidden meanwhile, and the recent notable events to show under it. `render` builds
 * the frame's lines, or nothing before there is anything to show.
 */
export class LiveFrame {
  /** The latest notable (`important`) log lines, 50 at most. */
  readonly recent: LogLine[] = []
  readonly #out: NodeJS.WriteStream
  readonly #render: (width: number, rows: number) => string[] | undefined
  #timer: ReturnType<typeof setInterval> | undefined
  #drawn = 0

  constructor(out: NodeJS.WriteStream, render: (width: number, rows: number) => string[] | undefined) {
    this.#out = out
    this.#render = render
  }

  note(line: LogLine): void {
    if (!line.important) return
    this.recent.push(line)
    if (this.recent.length > 50) this.recent.shift()
  }

  start(): void {
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
    const width = Math.max(40, (this.#out.columns ?? 100) - 1)
    const rows = Math.max(12, (this.#out.rows ?? 40) - 1)
    const lines = this.#render(width, rows)
    if (!lines) return
    const frame = lines.map((line) => fit(line, width)).join('\n')
    const up = this.#drawn > 0 ? `${ESC}${this.#drawn}A\r${ESC}0J` : ''
    this.#out.write(`${up}${frame}\n`)
    this.#drawn = lines.length
  }
}
