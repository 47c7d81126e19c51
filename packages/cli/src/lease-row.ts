import type { LeaseListing } from '@worklease/spec'

/** What an operator reads about a lease: `status` decodes the released mark, expiry and revocation. */
export type LeaseStatus = 'held' | 'expired' | 'released' | 'revoked'

/**
 * One lease as `--json` prints it, one object per line. Tokens are decimal strings (they exceed
 * JSON's exact integers); times are ISO 8601; `expiresInMs` is measured on the store's clock.
 */
export interface LeaseRow {
  readonly workId: string
  readonly holderId: string
  readonly fencingToken: string
  readonly status: LeaseStatus
  readonly free: boolean
  readonly released: boolean
  readonly expiresAt: string
  readonly expiresInMs: number
  readonly checkpointBytes: number | null
  /** The store's clock when the row was read. */
  readonly now: string
}

export function statusOf(lease: LeaseListing): LeaseStatus {
  if (lease.released) return 'released'
  // A revoked lease keeps no holder: no valid holderId is empty (see Backend.revoke).
  if (lease.holderId === '') return 'revoked'
  return lease.free ? 'expired' : 'held'
}

export function toRow(lease: LeaseListing, now: Date): LeaseRow {
  return {
    workId: lease.workId,
    holderId: lease.holderId,
    fencingToken: String(lease.fencingToken),
    status: statusOf(lease),
    free: lease.free,
    released: lease.released,
    expiresAt: lease.expiresAt.toISOString(),
    expiresInMs: lease.expiresAt.getTime() - now.getTime(),
    checkpointBytes: lease.checkpointBytes,
    now: now.toISOString(),
  }
}

/** `1.2 s`, `-3 min`, `2 h`: how far the expiry is from the store's now, short enough for a column. */
export function formatDuration(ms: number): string {
  const sign = ms < 0 ? '-' : ''
  const abs = Math.abs(ms)
  if (abs < 1_000) return `${sign}${abs} ms`
  if (abs < 60_000) return `${sign}${(abs / 1_000).toFixed(1)} s`
  if (abs < 3_600_000) return `${sign}${Math.round(abs / 60_000)} min`
  if (abs < 86_400_000) return `${sign}${(abs / 3_600_000).toFixed(1)} h`
  return `${sign}${(abs / 86_400_000).toFixed(1)} d`
}

export function formatBytes(bytes: number | null): string {
  if (bytes === null) return '-'
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

/**
 * What must not reach a terminal raw from user data (ids, holders): C0 and C1 controls and DEL, which
 * move the cursor, clear the screen or recolour it (C1 CSI U+009B is ESC [ on many terminals); the
 * bidi embeddings, overrides, isolates and marks, which reorder the text around them; and the line
 * and paragraph separators.
 */
const UNSAFE_ON_A_TERMINAL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

/**
 * What a reader cannot tell apart on a terminal: the above, every other format character (a zero-width
 * space, a soft hyphen, a byte order mark), every space but U+0020 (a no-break space), and every other
 * character Unicode says to draw as nothing (Default_Ignorable_Code_Point: variation selectors, the
 * combining grapheme joiner, Hangul fillers). Ids that differ only there are different leases, and an
 * operator copies what the table shows.
 */
const UNSEEN = /(?! )[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Zs}\p{Default_Ignorable_Code_Point}]/gu

/** `\x1b`, `\u00a0`, `\U000e0041`: as a shell's `$'...'` reads them back, in a UTF-8 locale. */
const escaped = (c: string) => {
  const point = c.codePointAt(0)!
  const [mark, digits] = point <= 0x7f ? ['x', 2] : point <= 0xffff ? ['u', 4] : ['U', 8]
  return `\\${mark}${point.toString(16).padStart(digits, '0')}`
}

/**
 * A message that quotes what the user typed (commander's own errors do), with every character a terminal
 * would act on or hide shown as its escape, as in {@link terminalSafe}; line breaks kept, as the
 * message's own.
 */
export function unseenShown(text: string): string {
  return text.replace(UNSEEN, (c) => (c === '\n' ? c : escaped(c)))
}

/**
 * The first line of what a store said, fit for a terminal: a store's message may quote what the store
 * holds (a malformed document's id), whose escapes a terminal would act on.
 */
export function storeMessage(error: unknown): string {
  return unseenShown(error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error))
}

/**
 * An id or holder made safe to print, and told apart from every other: a backslash and a single quote
 * escaped, every character above as a visible `\x1b` or `\u202e`, and a space at either end as
 * `\x20`. Inside a shell's `$'...'` what it shows is the id.
 */
export function terminalSafe(text: string): string {
  return text.replace(/[\\']/g, '\\$&').replace(UNSEEN, escaped).replace(/^ | $/g, '\\x20')
}

/**
 * An id in double quotes for a line of prose, shown as {@link terminalSafe} shows it, its own double
 * quotes escaped too: it cannot end its quotes and pose as the words after it.
 */
export function quoted(text: string): string {
  return `"${terminalSafe(text).replace(/"/g, '\\"')}"`
}

/**
 * One `--json` line: JSON.stringify leaves DEL, C1 and bidi controls raw, and `--json` may be read
 * on a terminal; as `\u009b` they parse back to the same string.
 */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value).replace(
    UNSAFE_ON_A_TERMINAL,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )
}
