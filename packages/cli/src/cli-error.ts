import type { ExitCode } from './exit-code.js'

/** A failure the command line reports as one line, with the exit code that says what kind it was. */
export class CliError extends Error {
  readonly exitCode: ExitCode

  constructor(message: string, exitCode: ExitCode, options?: ErrorOptions) {
    super(message, options)
    this.name = 'CliError'
    this.exitCode = exitCode
  }
}
