import { Command } from 'commander'
import { CliError } from '../cli-error.js'
import { ExitCode } from '../exit-code.js'
import { findLease } from '../find-lease.js'
import { idArgument } from '../id-argument.js'
import { colorsFor, type Io, writeLine } from '../io.js'
import { formatBytes, formatDuration, jsonLine, quoted, terminalSafe, toRow } from '../lease-row.js'
import { addStoreOptions, type StoreOptions, withStore } from '../store-options.js'

interface ShowOptions extends StoreOptions {
  json?: boolean
}

export function showCommand(io: Io): Command {
  return addStoreOptions(new Command('show'))
    .description('show one lease; exits 3 if the store has none for that workId')
    .argument('<workId>', 'the unit of work', idArgument('workId'))
    .option('--json', 'one JSON object (the fields of list --json)')
    .action(async (workId: string, options: ShowOptions) => {
      await withStore(options, io, async ({ backend, where }) => {
        const { lease, now } = await findLease(backend, workId)
        if (!lease) throw new CliError(`no lease for ${quoted(workId)} in ${where}`, ExitCode.NOT_FOUND)
        const row = toRow(lease, now)
        if (options.json) {
          writeLine(io.stdout, jsonLine(row))
          return
        }
        const { bold } = colorsFor(io.stdout, io.env)
        const fields: Array<[string, string, boolean?]> = [
          ['workId', row.workId],
          ['status', row.status],
          ['holder', row.holderId || '-'],
          ['token', row.fencingToken],
          ['expires at', `${row.expiresAt} (${formatDuration(row.expiresInMs)} from the store's now)`, true],
          ['free', row.free ? 'yes: an acquire would succeed now' : 'no', true],
          ['checkpoint', formatBytes(row.checkpointBytes), true],
          ['store now', row.now, true],
        ]
        // Only what the store holds is escaped as an id is: the fixed wording is ours.
        for (const [name, value, safe = false] of fields)
          writeLine(io.stdout, `${bold(name.padEnd(11))} ${safe ? value : terminalSafe(value)}`)
      })
    })
}
