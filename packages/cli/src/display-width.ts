// Combining marks take no column of their own. East Asian wide and fullwidth characters, and emoji
// shown as emoji, take two: the ranges of Unicode's East Asian Width W and F that terminals draw
// double, by block (a character a terminal draws otherwise only shifts the columns after it).
const ZERO_WIDTH = /[\p{Mn}\p{Me}]/u
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
  for (const c of text.replace(COLOUR, '')) width += ZERO_WIDTH.test(c) ? 0 : DOUBLE_WIDTH.test(c) ? 2 : 1
  return width
}
