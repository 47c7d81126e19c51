// Reads the output of `pnpm test` (every package's vitest and node:test runs, through turbo) on
// stdin and prints one closing line with the totals, so a reader of the CI log does not have to add
// up a dozen per-package summaries. It only reports; the exit code of `pnpm test` decides.
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
console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`)
