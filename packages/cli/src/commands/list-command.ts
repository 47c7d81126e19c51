import { Command } from 'commander'
import { idArgument } from '../id-argument.js'
import { colorsFor, type Io, readerGone, writeLine } from '../io.js'
import { jsonLine, quoted, toRow } from '../lease-row.js'
import { positiveInteger } from '../parse-number.js'
import { pages } from '../read-leases.js'
import { renderTable } from '../render-table.js'
import { addStoreOptions, type StoreOptions, withStore } from '../store-options.js'

interface ListOptions extends StoreOptions {
  json?: boolean
  limit?: number
  pageSize: number
}

export function listCommand(io: Io): Command {
  return addStoreOptions(new Command('list'))
    .description('list leases, in workId order, page by page (memory stays bounded whatever the table holds)')
    .argument(
      '[prefix]',
      'only workIds that start with this (literally: no wildcards)',
      idArgument('prefix', { emptyMeansAll: true }),
      '',
    )
    .option('--json', 'one JSON object per lease and line (see the README for the fields)')
    .option('-n, --limit <count>', 'stop after this many leases', positiveInteger('--limit'))
    .option('--page-size <count>', 'leases per query, 1..1000', positiveInteger('--page-size', 1_000), 500)
    .action(async (prefix: string, options: ListOptions) => {
      await withStore(options, io, async ({ backend }) => {
        const colors = colorsFor(io.stdout, io.env)
        let total = 0
        const widths: number[] = []
        for await (const page of pages(backend, {
          prefix,
          pageSize: options.pageSize,
          max: options.limit ?? Number.POSITIVE_INFINITY,
        })) {
          if (readerGone(io.stdout)) return
          const rows = page.leases.map((lease) => toRow(lease, page.now))
          if (options.json) for (const row of rows) writeLine(io.stdout, jsonLine(row))
          else if (rows.length > 0)
            for (const line of renderTable(rows, colors, { header: total === 0, widths })) {
              writeLine(io.stdout, line)
            }
          total += rows.length
        }
        if (!options.json && total === 0)
          writeLine(io.stderr, `no leases${prefix ? ` under ${quoted(prefix)}` : ''}`)
      })
    })
}
