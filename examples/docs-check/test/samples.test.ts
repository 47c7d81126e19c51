import { readdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, test } from 'vitest'
import { checkSamples, sampleFileName } from './check-samples.js'
import { extractSamples } from './extract-samples.js'

const here = dirname(fileURLToPath(import.meta.url))
const root = resolve(here, '../../..')
const outDir = resolve(here, '../.samples/docs')

/**
 * The Markdown whose ```ts samples must type-check. A package README can join once its samples
 * declare the free variables they use (a `<!-- prelude -->` comment, or an entry in FILE_PRELUDES).
 */
const files = [
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
  'README.md',
  'examples/driver-redis/README.md',
  ...['spec', 'memory', 'testkit', 'core', 'kysely', 'mongodb', 'dynamodb'].map(
    (name) => `packages/${name}/README.md`,
  ),
]

/**
 * Declarations for files that use free variables and do not carry `<!-- prelude -->` comments;
 * written with `import()` types so that they never clash with a sample's own imports.
 */
const FILE_PRELUDES: Record<string, string> = {
  'README.md': [
    "declare const db: import('kysely').Kysely<any>",
    'declare const output: { write(row: { page: number; fencingToken: bigint }): Promise<void> }',
  ].join('\n'),
}

const samples = files.flatMap((file) => extractSamples(join(root, file), file))
const problems = checkSamples(samples, outDir, FILE_PRELUDES)

describe('every ```ts sample in the docs type-checks', () => {
  test('the docs have samples to check', () => {
    expect(samples.filter((sample) => sample.file.startsWith('docs/')).length).toBeGreaterThan(10)
  })
  for (const sample of samples) {
    test(`${sample.file}:${sample.line}`, () => {
      expect(problems.get(sampleFileName(outDir, sample))).toEqual([])
    })
  }
})
