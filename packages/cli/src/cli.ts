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
