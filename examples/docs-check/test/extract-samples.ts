import { readFileSync } from 'node:fs'

/** One ```ts block of a Markdown file, ready to be written out as a module. */
export interface Sample {
  /** Markdown file, relative to the repository root. */
  readonly file: string
  /** 1-based line of the block's first code line in `file`. */
  readonly line: number
  /** The block's code. */
  readonly code: string
  /** Code prepended but not shown: a `<!-- prelude ... -->` comment right before the block. */
  readonly prelude: string
}

// Any opening fence, whatever its info string (```ts no-check (why) opens a block that is not checked).
const FENCE = /^(\s*)```(\w*)([^`]*)$/
// The body may not contain `-->`, so a file with several preludes gives each block only its own.
const PRELUDE = /<!--\s*prelude\s*\n((?:(?!-->)[\s\S])*)-->\s*$/

/**
 * Every ```ts (or ```typescript) block of a Markdown file, except those marked ```ts no-check. A block may be preceded by an HTML
 * comment `<!-- prelude ... -->` (invisible once rendered) holding declarations it needs, such as
 * `declare const db: Kysely<any>`; the checker puts it before the code.
 */
export function extractSamples(path: string, file: string): Sample[] {
  const lines = readFileSync(path, 'utf8').split('\n')
  const samples: Sample[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!)
    if (!open) continue
    const language = open[2]!
    const start = i + 1
    let end = start
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) end++
    const skipped = /\bno-check\b/.test(open[3]!)
    if ((language === 'ts' || language === 'typescript') && !skipped) {
      const before = lines.slice(0, i).join('\n')
      const prelude = PRELUDE.exec(before)?.[1] ?? ''
      const indent = open[1]!.length
      const code = lines
        .slice(start, end)
        .map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length)))
        .join('\n')
      samples.push({ file, line: start + 1, code, prelude })
    }
    i = end
  }
  return samples
}
