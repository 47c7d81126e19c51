// Combining marks take no column of their own. East Asian wide and fullwidth characters, and emoji
// shown as emoji, take two: the ranges of Unicode's East Asian Width W and F that terminals draw
// double, by block (a character a terminal draws otherwise only shifts the columns after it).
// Hangul's vowel and final jamo (U+1160-U+11FF, U+D7B0-U+D7FF) join the initial before them into one
// syllable, as a decomposed (NFD) name writes it: no column of their own. A flag's regional
// indicators are Emoji_Presentation but take one column each, as terminals count them.
const ZERO_WIDTH = /[\p{Mn}\p{Me}\u1160-\u11ff\ud7b0-\ud7ff]/u
const REGIONAL_INDICATOR = /[\u{1f1e6}-\u{1f1ff}]/u
const DOUBLE_WIDTH =
  /[\p{Emoji_Presentation}\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff\ufe10-\ufe19\ufe30-\ufe6f\uff00-\uff60\uffe0-\uffe6\u{16fe0}-\u{16fe4}\u{17000}-\u{18aff}\u{1b000}-\u{1b2ff}\u{1f200}-\u{1f2ff}\u{20000}-\u{3fffd}]/u
// The only escapes in the CLI's lines are its own colours.
// biome-ignore lint/suspicious/noControlCharactersInRegex: an escape sequence is what it matches
const COLOUR = /\u001b\[[0-9;]*m/g

/**
 * How many terminal columns `text` takes: by character, wide ones two, combining marks none, colour
 * escapes none. For text made terminal-safe first (no control characters left to move the cursor).
 *
 * ```ts
 * displayWidth('漢字') // 4
 * ```
 */
export function displayWidth(text: string): number {
  let width = 0
  for (const c of text.replace(COLOUR, '')) width += columnsOf(c)
  return width
}

const columnsOf = (c: string) =>
  ZERO_WIDTH.test(c) ? 0 : REGIONAL_INDICATOR.test(c) ? 1 : DOUBLE_WIDTH.test(c) ? 2 : 1

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' })

/**
 * `text` cut to at most `columns` terminal columns, its colours dropped, with `…` where it was cut:
 * between graphemes, so no flag, emoji sequence or accented letter is cut in half.
 *
 * ```ts
 * cutToWidth('worklease watch  sqlite:/a/very/long/path', 20) // 'worklease watch  sq…'
 * ```
 */
export function cutToWidth(text: string, columns: number): string {
  const plain = text.replace(COLOUR, '')
  if (displayWidth(plain) <= columns) return text
  let cut = ''
  let width = 0
  for (const { segment } of graphemes.segment(plain)) {
    const more = displayWidth(segment)
    if (width + more > columns - 1) break
    cut += segment
    width += more
  }
  return `${cut}…`
}
