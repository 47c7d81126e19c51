import type { Readable, Writable } from 'node:stream'
import pc from 'picocolors'
import type { Colors } from 'picocolors/types.js'

/** Where a run of the command line reads and writes; tests pass their own. */
export interface Io {
  readonly stdout: Writable & { isTTY?: boolean; columns?: number }
  readonly stderr: Writable & { isTTY?: boolean }
  readonly stdin: Readable & { isTTY?: boolean }
  readonly env: NodeJS.ProcessEnv
}

/** Colours only for a terminal, and never with NO_COLOR or TERM=dumb; FORCE_COLOR turns them on. */
export function colorsFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): Colors {
  const forced = env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0'
  const enabled = forced || (stream.isTTY === true && !('NO_COLOR' in env) && env.TERM !== 'dumb')
  return pc.createColors(enabled)
}

export function writeLine(stream: Writable, line = ''): void {
  stream.write(`${line}\n`)
}
