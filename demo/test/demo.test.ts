import { spawn } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, test } from 'vitest'

const DEMO_DIR = fileURLToPath(new URL('..', import.meta.url))

const CHECKS = [
  'every item completed',
  'every step result written exactly once',
  'no step accepted from a stale token',
  'crash followed by an unclean handoff',
  'graceful stop followed by a clean handoff',
  "paused worker's late writes all rejected",
  'run finished, no worker failed',
]

// Small enough for CI, large enough that every strike happens with someone left to take over.
const SMALL = [
  '--items',
  '6',
  '--steps',
  '4',
  '--workers',
  '3',
  '--ttl',
  '1000',
  '--step-ms',
  '100',
  '--seed',
  '42',
]

const POOL_CHECKS = [
  'every item completed',
  'every step result written, once',
  'no step accepted from a stale token',
  'no item run by two workers at once',
  'no checkpoint lost in a handoff',
  'joining workers took items by consent',
  'every consent handoff clean',
  'crashed worker: unclean handoffs',
  'run finished, no worker failed',
]

// Long enough that the joiners, the leave and the crash all land while items are still running; a
// ttl of 2 s, so a worker starved of CPU on a busy machine still renews in time.
const POOL_SMALL = [
  '--pool',
  '--items',
  '12',
  '--steps',
  '24',
  '--workers',
  '3',
  '--ttl',
  '2000',
  '--step-ms',
  '100',
  '--seed',
  '42',
]

/** Runs the demo as `pnpm demo` does (tsx, which the workers it forks inherit), without a TTY. */
function runDemo(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
      cwd: DEMO_DIR,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
    })
    child.once('error', reject)
    child.once('exit', (code) => resolve({ code, output }))
  })
}

/** The audit's verdict per check, from its table. */
function verdicts(output: string, checks: readonly string[] = CHECKS): Record<string, string> {
  const result: Record<string, string> = {}
  for (const line of output.split('\n')) {
    for (const name of checks) {
      const match = line.startsWith(name) ? /^\S.*?\s{2,}(PASS|FAIL)\s/.exec(line) : null
      if (match) result[name] = match[1]!
    }
  }
  return result
}

/**
 * Fails unless every check passed, naming those that did not (a diff of the whole output would be
 * folded by the reporter), with the demo's output below to say why.
 */
function expectAllPass(output: string, checks: readonly string[]): void {
  const verdict = verdicts(output, checks)
  const notPassed = checks
    .filter((name) => verdict[name] !== 'PASS')
    .map((name) => `${name}: ${verdict[name] ?? 'no verdict'}`)
  expect(notPassed, `the demo printed:\n${output}`).toEqual([])
}

/** `WORKLEASE_DIALECTS=postgres,mysql,sqlite` (default: all) picks the SQL servers, as in the kysely tests. */
const announcedSkips = new Set<string>()

/** Whether WORKLEASE_DIALECTS names this store; a test it leaves out is skipped with the reason printed. */
function selected(name: string): boolean {
  const wanted = (process.env.WORKLEASE_DIALECTS ?? 'postgres,mysql,sqlite').split(',').map((s) => s.trim())
  const chosen = wanted.includes(name) || (name === 'mysql' && wanted.includes('mariadb'))
  if (!chosen && !announcedSkips.has(name)) {
    announcedSkips.add(name)
    console.log(`[demo tests] skipped on ${name}: WORKLEASE_DIALECTS=${wanted.join(',')} does not name it`)
  }
  return chosen
}

describe('pnpm demo', () => {
  test('--help', async () => {
    const { code, output } = await runDemo(['--help'])
    expect(code).toBe(0)
    expect(output).toContain('--backend')
    expect(output).toContain('--no-fence')
    expect(output).toContain('--pool')
  })

  test('rejects a bad option', async () => {
    const { code, output } = await runDemo(['--backend', 'oracle'])
    expect(code).toBe(2)
    expect(output).toContain('--backend must be one of')
  })

  test('--keep is refused where nothing would outlive the run', async () => {
    const { code, output } = await runDemo(['--keep', '--backend', 'memory'])
    expect(code).toBe(2)
    expect(output).toContain('--keep works with --backend sqlite, postgres or mysql, not memory')
  })

  test.skipIf(!selected('sqlite'))('--keep leaves the SQLite file and prints how to list it', async () => {
    const { code, output } = await runDemo(['--keep', ...SMALL])
    const match = /^ {2}npx worklease list --store sqlite:(\S+) --table (wl_demo_\w+_leases)$/m.exec(output)
    expect({ match: match !== null, output }).toMatchObject({ match: true })
    const file = match![1]!
    try {
      expect(existsSync(file)).toBe(true)
      expect(output).toContain('tables kept (--keep)')
      expect(output).toContain('audit: PASS (7/7 checks passed)')
      expect(code).toBe(0)
    } finally {
      rmSync(dirname(file), { recursive: true, force: true })
    }
  })

  for (const backend of ['sqlite', 'postgres', 'mysql', 'memory'] as const) {
    test.skipIf(backend !== 'memory' && !selected(backend))(`the audit passes on ${backend}`, async () => {
      const { code, output } = await runDemo(['--backend', backend, ...SMALL])
      expectAllPass(output, CHECKS)
      expect(output).toContain('audit: PASS (7/7 checks passed)')
      expect(output).toMatch(/SIGKILL w\d+ holding/)
      expect(output).toMatch(/SIGSTOP w\d+ holding/)
      expect(output).toMatch(/SIGCONT w\d+ after/)
      expect(output).toMatch(/SIGTERM w\d+ holding/)
      expect(output).toMatch(/REJECTED by the fence/)
      expect(code).toBe(0)
    })
  }

  test('--pool is refused on the in-process memory backend', async () => {
    const { code, output } = await runDemo(['--pool', '--backend', 'memory'])
    expect(code).toBe(2)
    expect(output).toContain('--pool needs worker processes sharing a store')
  })

  for (const backend of ['sqlite', 'postgres', 'mysql'] as const) {
    test.skipIf(!selected(backend))(`--pool: the pool's audit passes on ${backend}`, async () => {
      const { code, output } = await runDemo(['--backend', backend, ...POOL_SMALL])
      expectAllPass(output, POOL_CHECKS)
      expect(output).toContain(`audit: PASS (${POOL_CHECKS.length}/${POOL_CHECKS.length} checks passed)`)
      expect(output).toMatch(/w\d+ started and joins the pool/)
      expect(output).toMatch(/SIGTERM w\d+ holding \d+ items: it leaves the pool cleanly/)
      expect(output).toMatch(/SIGKILL w\d+ holding \d+ items/)
      expect(output).toMatch(/took item-\d+ token \d+ \(clean handoff/)
      expect(output).toMatch(/took item-\d+ token \d+ \(UNCLEAN handoff/)
      expect(output).toMatch(/pool: .*moves \d+ \(clean \d+, unclean \d+\)/)
      expect(code).toBe(0)
    })
  }

  test.skipIf(!selected('sqlite'))(
    '--no-fence makes the audit fail: the stale write is accepted',
    async () => {
      const { code, output } = await runDemo(['--no-fence', ...SMALL])
      const verdict = verdicts(output)
      expect({ verdict: verdict['no step accepted from a stale token'], output }).toMatchObject({
        verdict: 'FAIL',
      })
      expect(verdict["paused worker's late writes all rejected"]).toBe('FAIL')
      expect(output).toMatch(/ACCEPTED \(no fence\)/)
      expect(output).toContain('audit: FAIL')
      expect(code).toBe(1)
    },
  )
})
