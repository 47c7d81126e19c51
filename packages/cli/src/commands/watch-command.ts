import { setTimeout as sleep } from 'node:timers/promises'
import { compareWorkIds, MAX_LIST_LIMIT } from '@worklease/spec'
import { Command } from 'commander'
import type { Colors } from 'picocolors/types.js'
import { isConnectionFailure } from '../connection-failure.js'
import { cutToWidth, displayWidth } from '../display-width.js'
import { idArgument } from '../id-argument.js'
import { whileInterruptible } from '../interrupt.js'
import { colorsFor, type Io, readerGone, writeLine } from '../io.js'
import { jsonLine, type LeaseRow, quoted, storeMessage, toRow } from '../lease-row.js'
import { LONGEST_TIMER_MS, positiveInteger } from '../parse-number.js'
import { pages } from '../read-leases.js'
import { renderTable } from '../render-table.js'
import { addStoreOptions, type StoreOptions, withStore } from '../store-options.js'

interface WatchOptions extends StoreOptions {
  json?: boolean
  interval: number
  count?: number
  limit?: number
}

const CLEAR_SCREEN = '\u001b[H\u001b[2J'

/**
 * The lines of one screen: `fixed`, then as many of `body` as the terminal shows, and a last line
 * saying how many more were left out. Every line ends in a newline, so the lines must take fewer
 * terminal lines than it has rows, a line wider than the terminal taking as many as it wraps to:
 * one more, and the terminal scrolls the title off the top.
 */
function fitToScreen(
  fixed: readonly string[],
  body: readonly string[],
  terminal: { rows?: number; columns?: number },
  colors: Colors,
): string[] {
  // A terminal of one row shows no line ending in a newline: nothing is written to it.
  const rows = Math.max(1, terminal.rows || 40)
  const columns = Math.max(2, terminal.columns || 80)
  // A line exactly as wide as the terminal wraps at once on some terminals: counted as two.
  const height = (line: string) => Math.ceil((displayWidth(line) + 1) / columns)
  // The title and the table's header on one line each, cut to the width (the header is as wide as
  // the widest id), and only as many as the rows hold.
  const heading = fixed.slice(0, rows - 1).map((line) => cutToWidth(line, columns - 1))
  let left = rows - 1 - heading.length
  const shown: string[] = []
  for (const [i, line] of body.entries()) {
    // The last line of the screen goes to "... N more" unless this line is the last of all.
    const reserve = i === body.length - 1 ? 0 : 1
    if (height(line) > left - reserve) {
      if (left > 0) shown.push(colors.dim(`... ${body.length - i} more`))
      break
    }
    shown.push(line)
    left -= height(line)
  }
  return [...heading, ...shown]
}

/** The wait before reading again once the store stopped answering; it doubles, up to the longest. */
const FIRST_RETRY_MS = 250
const LONGEST_RETRY_MS = 10_000

/** What makes a row "changed" for the plain-line and JSON views: not the ticking expiry. */
const identity = (row: LeaseRow) =>
  `${row.status}\u0000${row.holderId}\u0000${row.fencingToken}\u0000${row.checkpointBytes}`

export function watchCommand(io: Io): Command {
  return addStoreOptions(new Command('watch'))
    .description(
      'watch leases: a live table on a terminal; elsewhere (or with --json) one line per lease that appears, changes or goes',
    )
    .argument(
      '[prefix]',
      'only workIds that start with this',
      idArgument('prefix', { emptyMeansAll: true }),
      '',
    )
    .option(
      '--json',
      'one JSON object per change: {"change":"added"|"changed"|"removed", ...the list --json fields}',
    )
    .option(
      '-i, --interval <ms>',
      `time between reads, 1..${LONGEST_TIMER_MS} (about 24.8 days)`,
      positiveInteger('--interval', LONGEST_TIMER_MS),
      1_000,
    )
    .option(
      '-c, --count <reads>',
      'stop after this many reads (default: until Ctrl-C)',
      positiveInteger('--count'),
    )
    .option(
      '-n, --limit <count>',
      'watch only the first this many leases in workId order (default: every lease, page by page)',
      positiveInteger('--limit'),
    )
    .action(async (prefix: string, options: WatchOptions) => {
      await withStore(options, io, async ({ backend, label }) => {
        const colors = colorsFor(io.stdout, io.env)
        const live = io.stdout.isTTY === true && !options.json
        const limit = options.limit ?? Number.POSITIVE_INFINITY
        let previous = new Map<string, LeaseRow>()
        let saidWindow = false
        // Ctrl-C stops the watch (exit 0) whenever it comes: in a read too, which otherwise held it
        // up to the read's 10 s bound and then failed (exit 1).
        const stoppedByCtrlC = await whileInterruptible(['SIGINT'], async (interrupted) => {
          let reads = 0
          let retryMs = FIRST_RETRY_MS
          let inOutage = false
          while (!interrupted.aborted) {
            const rows: LeaseRow[] = []
            let now = new Date()
            let more = false
            try {
              for await (const page of pages(backend, {
                prefix,
                pageSize: MAX_LIST_LIMIT,
                max: limit,
                signal: interrupted,
              })) {
                now = page.now
                rows.push(...page.leases.map((lease) => toRow(lease, page.now)))
                more = page.cursor !== undefined
              }
            } catch (error) {
              if (interrupted.aborted && error === interrupted.reason) return true
              // A store that answered once and now refuses or drops connections is restarting: watch
              // waits it out. Before any read succeeded it is more likely misnamed (a wrong port),
              // and anything else (a missing table, a permission, bad credentials) stays a failure.
              // So does an outage under --count: a script that asked for N reads must end, and with
              // no bound on an outage, a store that never came back would hold it forever.
              if (reads === 0 || options.count !== undefined || !isConnectionFailure(error)) throw error
              if (!inOutage) {
                inOutage = true
                const reason = storeMessage(error)
                writeLine(io.stderr, `worklease: lost the store (${reason}); reading again until it answers`)
              }
              await sleep(retryMs, undefined, { signal: interrupted }).catch(() => undefined)
              retryMs = Math.min(retryMs * 2, LONGEST_RETRY_MS)
              continue
            }
            reads++
            inOutage = false
            retryMs = FIRST_RETRY_MS
            // Only --limit leaves leases unread; of those past the last one read, nothing is known.
            const windowEnd = more && rows.length >= limit ? rows.at(-1)?.workId : undefined
            if (live) {
              const held = rows.filter((row) => row.status === 'held').length
              const count = `${windowEnd === undefined ? '' : 'first '}${rows.length} leases`
              const title = colors.bold(
                `worklease watch  ${label}  ${now.toISOString()}  ${count}, ${held} held`,
              )
              const [heading = '', ...body] = renderTable(rows, colors)
              io.stdout.write(CLEAR_SCREEN)
              for (const line of fitToScreen([title, heading], body, io.stdout, colors))
                writeLine(io.stdout, line)
            } else {
              if (windowEnd !== undefined && !saidWindow) {
                saidWindow = true
                const under = prefix ? ` under ${quoted(prefix)}` : ''
                writeLine(
                  io.stderr,
                  `worklease: watching only the first ${limit} leases${under} (--limit ${limit}), in workId order: ` +
                    'a lease past them is reported neither changed nor removed',
                )
              }
              const current = new Map(rows.map((row) => [row.workId, row]))
              for (const row of rows) {
                const before = previous.get(row.workId)
                if (!before || identity(before) !== identity(row))
                  report(io, options, before ? 'changed' : 'added', row)
              }
              for (const [workId, row] of previous) {
                if (current.has(workId)) continue
                // Pushed past the window by leases that sort before it: out of view, not gone.
                if (windowEnd !== undefined && compareWorkIds(workId, windowEnd) > 0) current.set(workId, row)
                else report(io, options, 'removed', row)
              }
              previous = current
            }
            // A reader that went away (`| head`) ends the watch; its writes fail only as they are made.
            if (reads === options.count || readerGone(io.stdout)) break
            await sleep(options.interval, undefined, { signal: interrupted }).catch(() => undefined)
          }
          return interrupted.aborted
        })
        // A terminal echoes Ctrl-C as ^C where the cursor is, and ends no line: without one here,
        // the shell's prompt went on after it.
        const terminal = io.stdout.isTTY ? io.stdout : io.stderr.isTTY ? io.stderr : undefined
        if (stoppedByCtrlC && terminal) writeLine(terminal)
        // What was written before Ctrl-C is kept for a reader that reads late (a pager), as `list`'s
        // is: the process stays until it is read. A reader that never reads held it with no word,
        // and Ctrl-C seemed ignored; the next one ends the process (its handler is gone by now).
        const waiting = io.stdout.writableLength
        if (stoppedByCtrlC && waiting > 0)
          writeLine(
            io.stderr,
            `worklease: stopped; ${waiting} bytes of output wait for the reader (Ctrl-C again drops them)`,
          )
      })
    })
}

function report(io: Io, options: WatchOptions, change: 'added' | 'changed' | 'removed', row: LeaseRow): void {
  if (options.json) {
    writeLine(io.stdout, jsonLine({ change, ...row }))
    return
  }
  const holder = row.holderId ? ` holder=${quoted(row.holderId)}` : ''
  // The checkpoint's size is part of what a change is: without it, a "changed" line showed no change.
  const state = row.checkpointBytes === null ? '' : ` checkpoint=${row.checkpointBytes}B`
  writeLine(
    io.stdout,
    `${row.now} ${change} ${quoted(row.workId)} ${row.status}${holder} token=${row.fencingToken}${state}`,
  )
}
