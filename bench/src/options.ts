import { BACKEND_NAMES, type BackendName } from './target.js'

export interface BenchOptions {
  readonly quick: boolean
  readonly backends: readonly BackendName[]
  readonly runnerCost: readonly ('memory' | 'sqlite')[]
  /** Where latest.json and latest.md go. */
  readonly outDir: string | undefined
}

const USAGE = `usage: pnpm bench [--quick] [--backends memory,sqlite,postgres,mariadb,ferretdb,dynalite]
                  [--runner-cost memory,sqlite|none] [--out DIR]

  --quick        short runs (about 2 minutes in all); the default takes several minutes
  --backends     which backends to measure (default: all); servers come from POSTGRES_URL, MYSQL_URL,
                 MONGODB_URL, DYNAMODB_ENDPOINT, else the local ones (FerretDB and dynalite start here)
  --runner-cost  which backends hold 10,000 leases for the runner cost section (default: memory,sqlite)
  --out          directory for latest.json and latest.md (default: bench/results)`

/** Parses `pnpm bench` arguments; throws with the usage text on anything unknown. */
export function parseOptions(argv: readonly string[]): BenchOptions {
  let quick = false
  let backends: BackendName[] = [...BACKEND_NAMES]
  let runnerCost: ('memory' | 'sqlite')[] = ['memory', 'sqlite']
  let outDir: string | undefined
  const list = (value: string | undefined) =>
    (value ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter(Boolean)
  for (let index = 0; index < argv.length; index++) {
    const [flag, inline] = argv[index]!.split('=', 2) as [string, string | undefined]
    const value = () => inline ?? argv[++index]
    switch (flag) {
      case '--':
        break
      case '--quick':
        quick = true
        break
      case '--backends': {
        const names = list(value())
        const unknown = names.filter((name) => !(BACKEND_NAMES as readonly string[]).includes(name))
        if (unknown.length > 0 || names.length === 0)
          throw new Error(`unknown backend ${unknown.join(', ')}\n${USAGE}`)
        backends = BACKEND_NAMES.filter((name) => names.includes(name))
        break
      }
      case '--runner-cost': {
        const names = list(value())
        if (names.length === 1 && names[0] === 'none') runnerCost = []
        else if (names.every((name) => name === 'memory' || name === 'sqlite'))
          runnerCost = names as typeof runnerCost
        else throw new Error(`--runner-cost takes memory, sqlite or none\n${USAGE}`)
        break
      }
      case '--out':
        outDir = value()
        break
      case '--help':
      case '-h':
        console.log(USAGE)
        process.exit(0)
        break
      default:
        throw new Error(`unknown argument ${argv[index]}\n${USAGE}`)
    }
  }
  return { quick, backends, runnerCost, outDir }
}
