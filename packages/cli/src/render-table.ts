import type { Colors } from 'picocolors/types.js'
import { formatBytes, formatDuration, type LeaseRow, type LeaseStatus } from './lease-row.js'

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

// Ids are user data: a newline or an escape sequence in one must not break the table or the terminal.
const printable = (text: string) =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)

/** Lays rows out as aligned columns; widths count code points, so emoji ids stay roughly aligned. */
export function renderTable(rows: readonly LeaseRow[], colors: Colors, withHeader = true): string[] {
  const cells = rows.map((row) => [
    printable(row.workId),
    row.status,
    printable(row.holderId) || '-',
    row.fencingToken,
    row.status === 'held' ? formatDuration(row.expiresInMs) : '-',
    formatBytes(row.checkpointBytes),
  ])
  const width = (text: string) => [...text].length
  const widths = HEADERS.map((header, i) => Math.max(width(header), ...cells.map((line) => width(line[i]!))))
  const pad = (text: string, i: number) => text + ' '.repeat(widths[i]! - width(text))
  const lines = cells.map((line, r) =>
    line
      .map((cell, i) => (i === 1 ? paint(colors, rows[r]!.status, pad(cell, i)) : pad(cell, i)))
      .join('  ')
      .trimEnd(),
  )
  return withHeader ? [colors.bold(HEADERS.map(pad).join('  ').trimEnd()), ...lines] : lines
}
