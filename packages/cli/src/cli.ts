#!/usr/bin/env node
import { guardOutput } from './io.js'
import { run } from './run.js'

// Before anything is written: help text too can meet a closed pipe.
guardOutput(process.stdout)
guardOutput(process.stderr)

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
})
// The command is done and its output written (synchronously, on Linux, to files, pipes and terminals).
// A store client left waiting on a call the command gave up on (a server that never answered) would
// keep the process alive for ever: it gets a moment to close, then the process ends regardless.
setTimeout(() => process.exit(), 1_000).unref()
