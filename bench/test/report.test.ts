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
