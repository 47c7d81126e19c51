import { setTimeout as sleep } from 'node:timers/promises'
import { type Command, InvalidArgumentError } from 'commander'
import { boundedStoreCalls, storeCallGivenUp } from './bounded-store-calls.js'
import { CliError } from './cli-error.js'
import { ExitCode } from './exit-code.js'
import type { Io } from './io.js'
import { quoted } from './lease-row.js'
import { type OpenBackend, openBackend } from './open-backend.js'
import { parseStoreUrl } from './store-url.js'

/** How long closing the store may take once the command is done. */
const CLOSE_TIMEOUT_MS = 1_000

/** The options every command shares: where the leases are. */
export interface StoreOptions {
  store?: string
  table?: string
}

export function addStoreOptions(command: Command): Command {
  return command
    .option(
      '-s, --store <url>',
      'the store: sqlite:FILE, postgres://..., mysql://..., mongodb://HOST/DB[?binarySize=0], dynamodb://HOST:PORT?region=R&table=T&listIndex=I, ' +
        'or postgres|mysql|mongodb|dynamodb to read POSTGRES_URL, MYSQL_URL, MONGODB_URL, DYNAMODB_ENDPOINT (default: $WORKLEASE_STORE)',
      once('--store'),
    )
    .option(
      '-t, --table <name>',
      'the lease table or collection (default: worklease_leases)',
      once('--table'),
    )
}

/**
 * A commander option parser that refuses the option a second time: commander keeps the last, and a
 * revoke given `--table a --table b` ended a lease in b, whichever the user meant.
 */
function once(name: string): (value: string, previous: string | undefined) => string {
  return (value, previous) => {
    if (previous !== undefined) {
      throw new InvalidArgumentError(
        `${name} given twice (${quoted(previous)}, then ${quoted(value)}): name one`,
      )
    }
    return value
  }
}

/** Opens the store the options name, or fails with a usage error that says how to name one. */
export function openStore(options: StoreOptions, io: Io): Promise<OpenBackend> {
  const url = options.store ?? io.env.WORKLEASE_STORE
  if (!url) throw new CliError('no store: pass --store <url> or set WORKLEASE_STORE', ExitCode.USAGE)
  // Empty (`--table "$UNSET"`) is a mistake, not the default: read as the default, a revoke ended a
  // lease in another table than the one meant.
  if (options.table === '') throw new CliError('--table is empty: name one, or leave it out', ExitCode.USAGE)
  return openBackend(parseStoreUrl(url, io.env), options.table)
}

/** Runs `body` with the store open, and always closes it. */
export async function withStore<T>(
  options: StoreOptions,
  io: Io,
  body: (store: OpenBackend) => Promise<T>,
): Promise<T> {
  const store = await openStore(options, io)
  try {
    return await body({ ...store, backend: boundedStoreCalls(store.backend) })
  } finally {
    // A connection still waiting on a call given up on can keep close waiting too: not for ever.
    const closed = Promise.race([
      store.close().catch(() => undefined),
      sleep(CLOSE_TIMEOUT_MS, undefined, { ref: false }),
    ])
    // After a call given up on (timed out, or Ctrl-C), the close is not waited for here: the
    // process gives it its moment once the message is out (cli.ts), not a second moment before.
    if (!storeCallGivenUp()) await closed
  }
}
