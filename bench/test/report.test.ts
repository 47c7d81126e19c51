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

// The ferretdb section of session 43's full run (FerretDB 2.7 on PostgreSQL 18 with DocumentDB).
const ferretdb2 = JSON.parse(
  readFileSync(new URL('./fixtures/ferretdb2-peers.json', import.meta.url), 'utf8'),
) as BenchResults['peers'][number]

describe('why a MongoDB peer is ahead', () => {
  const whyLines = (server: string) =>
    renderMarkdown({ ...noRenewals, peers: [{ ...ferretdb2, server }] })
      .split('\n')
      .filter((line) => line.startsWith('Why: '))

  test('on FerretDB 2 the measured cost of its commands, not the 1.x text', () => {
    const [why, ...more] = whyLines(ferretdb2.server!)
    expect(more).toEqual([])
    expect(why).toMatch(/an update of a stored document costs ~1\.2x an insert or a delete/)
    expect(why).not.toMatch(/SQLite handler/)
  })

  test('on FerretDB 1.x its SQLite handler', () => {
    expect(whyLines('FerretDB v1.24.2 (SQLite)')).toEqual([expect.stringMatching(/SQLite handler/)])
  })
})
