import type { Readable, Writable } from 'node:stream'
import pc from 'picocolors'
import type { Colors } from 'picocolors/types.js'
import { CliError } from './cli-error.js'
import { ExitCode } from './exit-code.js'

/** Where a run of the command line reads and writes; tests pass their own. */
export interface Io {
  readonly stdout: Writable & { isTTY?: boolean; columns?: number; rows?: number }
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

interface OutputState {
  readerGone: boolean
  failure?: Error
}

const outputs = new WeakMap<Writable, OutputState>()

/**
 * Listens for write errors on `stream`. Node emits a failed write as an 'error' event, which with no
 * listener crashes the process with a stack trace: `worklease list | head -1` did, exit 1, as if the
 * store had failed. A reader that went away (EPIPE) is the normal end of a pipeline, not a failure.
 */
export function guardOutput(stream: Writable): void {
  stateOf(stream)
}

function stateOf(stream: Writable): OutputState {
  const known = outputs.get(stream)
  if (known) return known
  const state: OutputState = { readerGone: false }
  outputs.set(stream, state)
  stream.on('error', (error: NodeJS.ErrnoException) => noteWriteError(state, error))
  return state
}

function noteWriteError(state: OutputState, error: NodeJS.ErrnoException): void {
  if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') state.readerGone = true
  else state.failure ??= error
}

/**
 * Whether the reader of `stream` went away (`| head`): the command should stop quietly, exit 0.
 * Any other failure to write (a full disk) is thrown: the output is incomplete, and exit 0 would hide it.
 */
export function readerGone(stream: Writable): boolean {
  const state = stateOf(stream)
  if (state.failure)
    throw new CliError(`cannot write the output: ${state.failure.message}`, ExitCode.STORE_FAILED)
  return state.readerGone || stream.destroyed
}

/** Writes one line; once the reader has gone, drops it (the command stops at its next check). */
export function writeLine(stream: Writable, line = ''): void {
  const state = stateOf(stream)
  if (state.readerGone || state.failure || stream.destroyed) return
  stream.write(`${line}\n`)
}

/**
 * Settles once everything written to `stream` so far has left the process, or failed to. A failed
 * write (`>/dev/full`, a full disk) is reported after the write returns: a command whose last write
 * failed had finished by then, and exited 0 with its output lost. Call `readerGone` after it.
 */
export async function flushed(stream: Writable): Promise<void> {
  const state = stateOf(stream)
  // Writes still under way: an empty one queued behind them calls back once they are done. Not
  // made when none are (an empty write to /dev/full fails too, and nothing was lost then).
  if (stream.writableLength > 0 && !state.readerGone && !stream.destroyed && !stream.errored) {
    await new Promise<void>((resolve) => {
      stream.write('', () => resolve())
    })
  }
  // A failed write marks the stream errored at once; its 'error' event comes a tick later.
  if (stream.errored) noteWriteError(state, stream.errored)
}

/**
 * Once a command is done: waits for its output to leave, then throws as `readerGone` does if any of
 * it could not be written. A reader that went away (`| head -1`) is still a quiet success.
 */
export async function outputComplete(stream: Writable): Promise<void> {
  await flushed(stream)
  readerGone(stream)
}
