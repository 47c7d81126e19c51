// Found by a review (session 50): characters Unicode draws as nothing (variation selectors, the
// combining grapheme joiner, Hangul fillers) printed raw, so distinct ids looked alike; columns were
// counted in code points, so CJK and combining marks shifted the table; watch filled every row of the
// terminal (and long ids wrapped), scrolling its own title off the screen; and a repeated --table or
// --store silently took the last.
import { PassThrough } from 'node:stream'
import pc from 'picocolors'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { cutToWidth, displayWidth } from '../src/display-width.js'
import { terminalSafe, toRow } from '../src/lease-row.js'
import { renderTable } from '../src/render-table.js'
import { run } from '../src/run.js'
import { cli, openTestStore, type TestStore } from './e2e/harness.js'

describe('ids a reader cannot tell apart', () => {
  test.each([
    ['U+034F combining grapheme joiner', 'job\u034f', 'job\\u034f'],
    ['U+FE0F variation selector-16', 'job\ufe0f', 'job\\ufe0f'],
    ['U+3164 Hangul filler', 'job\u3164', 'job\\u3164'],
    ['U+115F Hangul choseong filler', 'job\u115f', 'job\\u115f'],
    ['U+FFA0 halfwidth Hangul filler', 'job\uffa0', 'job\\uffa0'],
    ['U+E0100 variation selector-17', 'job\u{e0100}', 'job\\U000e0100'],
  ])('%s is shown escaped', (_name, id, shown) => {
    expect(terminalSafe(id)).toBe(shown)
  })
})

describe('table columns', () => {
  test('displayWidth counts terminal columns: CJK and emoji two, combining marks none', () => {
    expect(displayWidth('abcd')).toBe(4)
    expect(displayWidth('漢字')).toBe(4)
    expect(displayWidth('e\u0301')).toBe(1)
    expect(displayWidth('\u{1F600}')).toBe(2)
    expect(displayWidth(pc.createColors(true).green('ok'))).toBe(2)
    // Review of the first version: a flag's regional indicators take one column each, and a
    // decomposed (NFD) Hangul syllable takes two, its vowel and final jamo none (as wcwidth says).
    expect(displayWidth('\u{1F1EF}\u{1F1F5}')).toBe(2)
    expect(displayWidth('\u1112\u1161\u11ab')).toBe(2)
    expect(displayWidth('한')).toBe(2)
  })

  // Review of the fit: the title was cut between code points, so half a flag or an emoji sequence
  // cut at its joiner could be left.
  test.each([
    ['a flag', 'a\u{1f1ef}\u{1f1f5}bc', 3, 'a…'],
    ['an emoji sequence', 'ab\u{1f468}\u200d\u{1f469}\u200d\u{1f467}cd', 6, 'ab…'],
    ['a skin tone', 'ab\u{1f44d}\u{1f3fd}cd', 5, 'ab…'],
    ['an accented letter', 'abe\u0301cd', 4, 'abe\u0301…'],
  ])('cutToWidth keeps %s whole or leaves it out', (_, text, columns, cut) => {
    expect(cutToWidth(text, columns)).toBe(cut)
  })

  test('the STATUS column starts at the same terminal column on every line', () => {
    const lease = (workId: string) => ({
      workId,
      holderId: 'worker-a',
      fencingToken: 1n,
      expiresAt: new Date(60_000),
      released: false,
      free: false,
      checkpointBytes: null,
    })
    const ids = ['abcd', '漢字漢字', 'e\u0301', 'job-\u{1F600}', '\u{1F1EF}\u{1F1F5}', '\u1112\u1161\u11ab']
    const lines = renderTable(
      ids.map((id) => toRow(lease(id), new Date(0))),
      pc.createColors(false),
    )
    const starts = lines.map((line) => displayWidth(line.slice(0, line.search(/STATUS|held/))))
    expect(new Set(starts)).toEqual(new Set([displayWidth('漢字漢字') + 2]))
  })
})

describe('the command line', () => {
  let store: TestStore
  beforeAll(async () => {
    store = await openTestStore('sqlite')
    await store.backend.acquire('job-1', 'worker-a', 600_000)
  })
  afterAll(async () => {
    await store?.close()
  })

  test('--table or --store given twice is a usage error, and nothing is revoked', async () => {
    const twiceTable = await cli([
      'revoke',
      'job-1',
      '--yes',
      '--store',
      store.url,
      '--table',
      'meant',
      '--table',
      store.table,
    ])
    expect(twiceTable).toMatchObject({ code: 2, stderr: expect.stringContaining('--table given twice') })
    const twiceStore = await cli([
      'list',
      '--store',
      'sqlite:/nonexistent/meant.db',
      '--store',
      store.url,
      '--table',
      store.table,
    ])
    expect(twiceStore).toMatchObject({ code: 2, stderr: expect.stringContaining('--store given twice') })
    expect((await store.backend.list!({ prefix: 'job-1' })).leases[0]).toMatchObject({ free: false })
  })

  /** One live screen of `worklease watch --count 1` on a terminal of `rows` x `columns`. */
  async function watchScreen(prefix: string, rows: number, columns: number): Promise<string[]> {
    let written = ''
    const stdout = Object.assign(new PassThrough(), { isTTY: true, rows, columns })
    stdout.on('data', (chunk: Buffer) => {
      written += chunk.toString()
    })
    const io = { stdout, stderr: new PassThrough(), stdin: new PassThrough(), env: { NO_COLOR: '1' } }
    const code = await run(
      ['watch', prefix, '--count', '1', '--store', store.url, '--table', store.table],
      io,
    )
    expect(code).toBe(0)
    return written.split('\u001b[H\u001b[2J').at(-1)!.replace(/\n$/, '').split('\n')
  }
  /** Terminal lines the screen takes, each line as many as it wraps to. */
  const height = (lines: string[], columns: number) =>
    lines.reduce((sum, line) => sum + Math.ceil((displayWidth(line) + 1) / columns), 0)

  test('watch keeps its title on screen with more leases than rows, or ids wider than the terminal', async () => {
    for (let i = 0; i < 30; i++)
      await store.backend.acquire(`many-${String(i).padStart(2, '0')}`, 'worker-a', 600_000)
    const many = await watchScreen('many-', 12, 120)
    expect(many[0]).toMatch(/^worklease watch .* 30 leases, 30 held$/)
    expect(height(many, 120)).toBeLessThan(12)
    expect(many.at(-1)).toMatch(/^\.\.\. \d+ more$/)

    for (let i = 0; i < 7; i++)
      await store.backend.acquire(`long-${i}-${'t'.repeat(150)}`, 'worker-a', 600_000)
    const long = await watchScreen('long-', 12, 120)
    expect(long[0]).toMatch(/^worklease watch .* 7 leases, 7 held$/)
    expect(height(long, 120)).toBeLessThan(12)
    // Two rows' worth of lines each: as many as fit, and the rest counted.
    expect(long.at(-1)).toMatch(/^\.\.\. \d+ more$/)

    // Review of the first version: on a narrow terminal the title and the header (as wide as the
    // widest id) alone filled it, and it scrolled all the same; a 3-row terminal got 4 lines.
    const narrow = await watchScreen('long-0', 10, 40)
    expect(narrow[0]).toMatch(/^worklease watch .*…$/)
    expect(height(narrow, 40)).toBeLessThan(10)
    const short = await watchScreen('many-', 3, 120)
    expect(height(short, 120)).toBeLessThan(3)
    expect(short[0]).toMatch(/^worklease watch/)

    // Review of the fit: columns were taken as at least 20 and rows as at least 2, so a terminal
    // narrower than that, or of one row, scrolled all the same.
    const tiny = await watchScreen('many-', 4, 12)
    expect(height(tiny, 12)).toBeLessThan(4)
    expect((await watchScreen('many-', 1, 80)).filter((line) => line !== '')).toEqual([])

    // All of them when they fit, with no "more" line.
    const few = await watchScreen('job-', 12, 120)
    expect(few.slice(1).map((line) => line.split(/\s+/)[0])).toEqual(['WORK', 'job-1'])
  })
})
