#!/usr/bin/env node
import { storeCallGivenUp } from './bounded-store-calls.js'
import { flushed, guardOutput } from './io.js'
import { quietPgSslModeWarning, quietSdkNodeVersionWarning } from './process-warnings.js'
import { run } from './run.js'

// Before anything is written: help text too can meet a closed pipe.
guardOutput(process.stdout)
guardOutput(process.stderr)
quietSdkNodeVersionWarning(process.env)
quietPgSslModeWarning(process)

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
})
// A store client left waiting on a call the command gave up on (a server that never answered) would
// keep the process alive for ever. Once the output is out (a pipe read late, by a pager, holds it
// back), it gets a moment more to close, then the process ends regardless.
if (storeCallGivenUp()) {
  await Promise.all([flushed(process.stdout), flushed(process.stderr)])
  setTimeout(() => process.exit(), 1_000).unref()
}
