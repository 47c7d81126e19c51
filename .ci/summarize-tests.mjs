// Reads the output of `pnpm test` (every package's vitest and node:test runs, through turbo) on
// stdin and prints one closing line with the totals, so a reader of the CI log does not have to add
// up a dozen per-package summaries. It only reports; the exit code of `pnpm test` decides.
//
// With WORKLEASE_TEST_REPORTS (the directory scripts/judged-reporter.mjs writes), it also lists, per
// driver, every server the tests ran on with their counts; WORKLEASE_SERVER_LABELS names each server
// (lines of `key<TAB>label`) and WORKLEASE_NOT_JUDGED lists the servers that could not be had.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes start with ESC
const ansi = /\u001b\[[0-9;]*m/g
const totals = { passed: 0, failed: 0, skipped: 0 }
const runs = []

for await (const raw of createInterface({ input: process.stdin })) {
  const line = raw.replace(ansi, '')
  const vitest = /^(?:(\S+):test:)?\s*Tests\s+(.*)\((\d+)\)\s*$/.exec(line)
  if (vitest) {
    const counts = Object.fromEntries(
      [...vitest[2].matchAll(/(\d+) (passed|failed|skipped|todo)/g)].map((m) => [m[2], Number(m[1])]),
    )
    totals.passed += counts.passed ?? 0
    totals.failed += counts.failed ?? 0
    totals.skipped += (counts.skipped ?? 0) + (counts.todo ?? 0)
    runs.push(`${vitest[1] ?? '?'}: ${vitest[2].trim()}`)
    continue
  }
  const nodeTest = /^(?:(\S+):test:)?\s*# (pass|fail|skipped) (\d+)\s*$/.exec(line)
  if (nodeTest) {
    const key = nodeTest[2] === 'pass' ? 'passed' : nodeTest[2] === 'fail' ? 'failed' : 'skipped'
    totals[key] += Number(nodeTest[3])
    if (key === 'passed') runs.push(`${nodeTest[1] ?? '?'}: node:test ${nodeTest[3]} passed`)
  }
}

console.log(`\nTest runs (${runs.length}):\n${runs.map((r) => `  ${r}`).join('\n')}`)
judgedByServer()
console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`)

function readLines(file) {
  return file && existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []
}

// Which server a test ran on, by package: the target named in the test's name (kysely, torture),
// the vitest project (dynamodb), or the one server of the run (mongodb).
function serverOf(test, labels) {
  const label = (key) => labels.get(key) ?? key
  const named = (keys) => keys.find((key) => new RegExp(`(^|[^\\w-])${key}($|[^\\w-])`).test(test.name))
  switch (test.package) {
    case '@worklease/kysely': {
      const key = named(['postgres18', 'mysql97', 'postgres', 'mariadb', 'sqlite-file', 'sqlite-memory'])
      return key ? label(key) : 'no server (unit tests)'
    }
    case '@worklease/mongodb':
      return process.env.MONGODB_URL
        ? 'MONGODB_URL'
        : process.env.FERRETDB2_URL
          ? label('ferretdb2')
          : label('ferretdb')
    case '@worklease/dynamodb':
      return label(test.project || 'dynalite')
    case '@worklease/torture': {
      const key = /^torture: ([\w-]+)/.exec(test.name)?.[1] ?? named(['ferretdb', 'sqlite', 'memory'])
      return key ? label(key) : 'no server (checker and proxy tests)'
    }
    default:
      return 'other'
  }
}

function judgedByServer() {
  const dir = process.env.WORKLEASE_TEST_REPORTS
  if (!dir || !existsSync(dir)) return
  const labels = new Map(
    readLines(process.env.WORKLEASE_SERVER_LABELS).map((line) => line.split('\t').slice(0, 2)),
  )
  const counts = new Map() // package -> server -> counts
  for (const file of readdirSync(dir)
    .filter((name) => name.endsWith('.jsonl'))
    .sort()) {
    for (const line of readLines(join(dir, file))) {
      const test = JSON.parse(line)
      const server = serverOf(test, labels)
      const byServer = counts.get(test.package) ?? new Map()
      counts.set(test.package, byServer)
      const c = byServer.get(server) ?? { passed: 0, failed: 0, skipped: 0 }
      byServer.set(server, c)
      if (test.state === 'passed') c.passed++
      else if (test.state === 'failed') c.failed++
      else c.skipped++
    }
  }
  console.log('\nJudged by server (per driver):')
  for (const [pkg, byServer] of counts) {
    console.log(`  ${pkg}`)
    for (const [server, c] of byServer) {
      console.log(`    ${server}: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped`)
    }
  }
  const notJudged = readLines(process.env.WORKLEASE_NOT_JUDGED)
  for (const line of notJudged) console.log(`  not judged: ${line}`)
  if (notJudged.length === 0) console.log('  not judged: none (every server of scripts/servers.sh was up)')
}
