import { readFileSync } from 'node:fs'
import { expect, test } from 'vitest'
import { groups, suiteCases } from '../src/index.js'
import { brokenBackends } from './broken-backends.js'
import { memoryFactory } from './memory-harness.js'

// The numbers the docs give of the suite, checked against it: each went stale once as cases and
// broken backends were added (found by a review, session 51).
const guide = readFileSync(new URL('../../../docs/writing-a-driver.md', import.meta.url), 'utf8')
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

test("docs/writing-a-driver.md gives each group's count of cases, and their sum", () => {
  const documented = Object.fromEntries(
    Object.keys(groups).map((group) => [
      group,
      Number(guide.match(new RegExp(`^\\| \`${group}\` \\| (\\d+) \\|`, 'm'))?.[1]),
    ]),
  )
  const counted = Object.fromEntries(
    Object.keys(groups).map((group) => [
      group,
      suiteCases({ factory: memoryFactory }).filter((c) => c.group === group).length,
    ]),
  )
  expect(documented).toEqual(counted)
  expect(Number(guide.match(/\((\d+) cases today\)/)?.[1])).toBe(
    suiteCases({ factory: memoryFactory }).length,
  )
})

test('the guide and the README count the broken backends the suite is run against', () => {
  const counts = [guide, readme].map((text) => Number(text.match(/against (\d+) deliberately broken/)?.[1]))
  expect(counts).toEqual([brokenBackends.length, brokenBackends.length])
})
