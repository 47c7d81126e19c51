import type { Colors } from 'picocolors/types.js'
import { displayWidth } from './display-width.js'
import { formatBytes, formatDuration, type LeaseRow, type LeaseStatus, terminalSafe } from './lease-row.js'

const HEADERS = ['WORK ID', 'STATUS', 'HOLDER', 'TOKEN', 'EXPIRES IN', 'CHECKPOINT'] as const

function paint(colors: Colors, status: LeaseStatus, text: string): string {
  switch (status) {
    case 'held':
      return colors.green(text)
    case 'expired':
      return colors.yellow(text)
    case 'revoked':
      return colors.red(text)
    case 'released':
      return colors.dim(text)
  }
}

/** How {@link renderTable} lays out one batch of rows. */
export interface TableLayout {
  /** Print the header line first. Default: true. */
  readonly header?: boolean
  /**
   * Column widths kept across the pages of one listing, widened here in place: a column widens to
   * its widest cell so far and never narrows, so the pages line up as far as they can without
   * reading ahead (the listing's memory stays bounded).
   */
  readonly widths?: number[]
}

/**
 * Lays rows out as aligned columns, ids made terminal-safe (a newline or escape in one must not break
 * the table or the terminal); widths are terminal columns (see {@link displayWidth}), so ids in CJK
 * or with combining marks keep the columns after them in line.
 */
export function renderTable(
  rows: readonly LeaseRow[],
  colors: Colors,
  { header = true, widths = [] }: TableLayout = {},
): string[] {
  const cells = rows.map((row) => [
    terminalSafe(row.workId),
    row.status,
    terminalSafe(row.holderId) || '-',
    row.fencingToken,
    row.status === 'held' ? formatDuration(row.expiresInMs) : '-',
    formatBytes(row.checkpointBytes),
  ])
  const width = displayWidth
  HEADERS.forEach((title, i) => {
    widths[i] = Math.max(widths[i] ?? 0, width(title), ...cells.map((line) => width(line[i]!)))
  })
  const pad = (text: string, i: number) => text + ' '.repeat(widths[i]! - width(text))
  const lines = cells.map((line, r) =>
    line
      .map((cell, i) => (i === 1 ? paint(colors, rows[r]!.status, pad(cell, i)) : pad(cell, i)))
      .join('  ')
      .trimEnd(),
  )
  return header ? [colors.bold(HEADERS.map(pad).join('  ').trimEnd()), ...lines] : lines
}
