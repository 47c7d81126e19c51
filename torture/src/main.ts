// pnpm torture [--backend X[,Y]] [--minutes N | --seconds N] [--seed S] [--processes K] [--connections N]
//              [--counter-workers N] [--runner-workers N] [--pool-members N] [--pool-units N] [--no-faults]
//        pnpm torture --check <kept history dir>
import { BACKENDS, type BackendName } from './targets.js'
import { failed, formatReport, recheck, runTorture } from './torture.js'

function parse(argv: string[]) {
  const args = new Map<string, string>()
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i]!
    if (!key.startsWith('--')) throw new Error(`unexpected argument ${key}`)
    if (key === '--no-faults' || key === '--help') args.set(key.slice(2), 'true')
    else args.set(key.slice(2), argv[++i] ?? '')
  }
  return args
}

const args = parse(process.argv.slice(2).filter((a) => a !== '--'))
if (args.has('help')) {
  console.log(
    `usage: pnpm torture [--backend ${BACKENDS.join('|')}|all] [--minutes N | --seconds N] [--seed S] [--processes K] [--connections N] [--counter-workers N] [--runner-workers N] [--pool-members N] [--pool-units N] [--no-faults]\n       pnpm torture --check <history dir a run kept>   (check it again)`,
  )
  process.exit(0)
}
if (args.has('check')) {
  const { violations, summary } = recheck(args.get('check')!)
  console.log(summary)
  process.exit(violations.length > 0 ? 1 : 0)
}
const wanted = (args.get('backend') ?? 'all').split(',')
const backends = (wanted.includes('all') ? [...BACKENDS] : wanted) as BackendName[]
for (const b of backends)
  if (!BACKENDS.includes(b)) throw new Error(`unknown backend ${b}; one of ${BACKENDS.join(', ')}`)
const durationMs = args.has('minutes')
  ? Number(args.get('minutes')) * 60_000
  : Number(args.get('seconds') ?? 10) * 1_000
const seed = args.has('seed') ? Number(args.get('seed')) : Math.floor(Math.random() * 2 ** 31)

let anyFailed = false
for (const backend of backends) {
  const report = await runTorture({
    backend,
    durationMs,
    seed,
    processes: args.has('processes') ? Number(args.get('processes')) : 5,
    faults: !args.has('no-faults'),
    ...(args.has('connections') ? { connections: Number(args.get('connections')) } : {}),
    ...(args.has('counter-workers') ? { counterWorkers: Number(args.get('counter-workers')) } : {}),
    ...(args.has('runner-workers') ? { runnerWorkers: Number(args.get('runner-workers')) } : {}),
    ...(args.has('pool-members') ? { poolMembers: Number(args.get('pool-members')) } : {}),
    ...(args.has('pool-units') ? { poolUnits: Number(args.get('pool-units')) } : {}),
    log: (line) => console.error(line),
  })
  console.log(formatReport(report))
  // A server that declares itself not atomic is reported, but does not fail the run.
  if (failed(report) && !report.notAtomic) anyFailed = true
}
process.exit(anyFailed ? 1 : 0)
