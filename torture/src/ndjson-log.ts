import { closeSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'

/**
 * One process's log of one kind in a run's history directory: a JSON object per line, appended with
 * synchronous writes, so a SIGKILL loses at most the line being written.
 */
export class NdjsonLog<L> {
  readonly #fd: number

  constructor(dir: string, process: string, suffix: string) {
    this.#fd = openSync(join(dir, `${process}${suffix}`), 'a')
  }

  write(line: L): void {
    writeSync(this.#fd, `${JSON.stringify(line)}\n`)
  }

  close(): void {
    closeSync(this.#fd)
  }
}

/** Every line of the logs ending in `suffix` in a run's history directory; lines torn by SIGKILL are skipped. */
export function loadNdjson<L>(dir: string, suffix: string): L[] {
  const lines: L[] = []
  for (const file of readdirSync(dir).filter((name) => name.endsWith(suffix))) {
    for (const text of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!text) continue
      try {
        lines.push(JSON.parse(text))
      } catch {
        // torn by SIGKILL mid-write
      }
    }
  }
  return lines
}
