import { Command, CommanderError } from 'commander'
import { CliError } from './cli-error.js'
import { listCommand } from './commands/list-command.js'
import { revokeCommand } from './commands/revoke-command.js'
import { showCommand } from './commands/show-command.js'
import { watchCommand } from './commands/watch-command.js'
import { ExitCode } from './exit-code.js'
import { type Io, outputComplete, writeLine } from './io.js'
import { storeMessage, unseenShown } from './lease-row.js'

/** The program, with every command; `io` is where it reads and writes. */
export function createProgram(io: Io): Command {
  const program = new Command('worklease')
    .description("Look at a worklease store's leases and end a wedged holder's lease.")
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // Commander quotes a refused argument as typed: a terminal escape in it would be acted on.
      outputError: (text, write) => write(unseenShown(text)),
    })
    .exitOverride()
    .showHelpAfterError('(worklease --help lists the commands; worklease <command> --help their options)')
  for (const command of [listCommand(io), showCommand(io), watchCommand(io), revokeCommand(io)]) {
    // addCommand copies no settings: without this a subcommand's errors bypassed the escaping above.
    program.addCommand(command.exitOverride().configureOutput(program.configureOutput()))
  }
  return program
}

/**
 * Runs the command line and resolves with the exit code; never throws. Every failure is one line on
 * stderr: store errors are reported by their message, never as a stack trace.
 *
 * ```ts
 * process.exitCode = await run(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env })
 * ```
 */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  let code: number
  try {
    await createProgram(io).parseAsync([...argv], { from: 'user' })
    code = ExitCode.OK
  } catch (error) {
    code = failed(error, io)
  }
  if (code !== ExitCode.OK) return code
  // The last writes can fail after the command returned (`>/dev/full`): exit 0 would hide that.
  return outputComplete(io.stdout).then(
    () => ExitCode.OK,
    (error: unknown) => failed(error, io),
  )
}

/** Reports what ended a run as one line on stderr, and gives its exit code. */
function failed(error: unknown, io: Io): number {
  if (error instanceof CommanderError) {
    // Help and version end "with an error" in commander; they are successes here.
    return error.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE
  }
  if (error instanceof CliError) {
    writeLine(io.stderr, `worklease: ${error.message}`)
    return error.exitCode
  }
  const message = storeMessage(error)
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'INVALID_ARGUMENT') {
    writeLine(io.stderr, `worklease: ${message}`)
    return ExitCode.USAGE
  }
  writeLine(io.stderr, `worklease: the store failed: ${message}`)
  return ExitCode.STORE_FAILED
}
