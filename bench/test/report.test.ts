import { readFileSync } from 'node:fs'
import { describe, expect, test } from 'vitest'
import { renderMarkdown } from '../src/report.js'
import type { BenchResults } from '../src/results.js'

// The batch-renewal rows of a `pnpm bench --quick` made before --quick renewed inside its window:
// every child counted 0 renewals, so each per-renewal figure is NaN, stored by JSON as null.
const noRenewals = JSON.parse(
  readFileSync(new URL('./fixtures/quick-batch-renewal-no-renewals.json', import.meta.url), 'utf8'),
) as BenchResults

describe('report', () => {
  test('a batch-renewal row with no renewal in its window says so, never null', () => {
    const rows = renderMarkdown(noRenewals)
      .split('\n')
      .filter((line) => / \| (batched|per lease) \| /.test(line))
    expect(rows).toHaveLength(6)
    for (const row of rows) {
      const cells = row.split('|').map((cell) => cell.trim())
      expect(cells).not.toContain('null')
      expect(cells).toContain('n/a: no renewal in the window ⚠')
    }
  })
})

describe('why a MongoDB peer is ahead', () => {
  // Only the server's label picks the text; a section with no sides prints it all the same.
  const whyLines = (server: string) =>
    renderMarkdown({ ...noRenewals, peers: [{ store: 'ferretdb', server, sides: [] }] })
      .split('\n')
      .filter((line) => line.startsWith('Why: '))

  test.each([
    ['FerretDB 2 (MongoDB wire 7.0.77; no genuine mongod on this machine)'],
    ['FerretDB v2.7.0 (MongoDB wire 7.0.77)'],
  ])('on %s: what FerretDB 2.7 was timed at, not the 1.x text', (server) => {
    const [why, ...more] = whyLines(server)
    expect(more).toEqual([])
    expect(why).toMatch(/FerretDB 2\.7/)
    expect(why).not.toMatch(/SQLite/)
  })

  test('on FerretDB 1.x: its SQLite handler', () => {
    expect(whyLines('FerretDB v1.24.2 (MongoDB wire 7.0.42)')).toEqual([
      expect.stringMatching(/SQLite handler/),
    ])
  })

  test('on a genuine MongoDB: nothing, since no timing of its own was made', () => {
    expect(whyLines('MongoDB 8.0.4')).toEqual([])
  })
})
