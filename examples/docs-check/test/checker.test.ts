import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { checkSamples, sampleFileName } from './check-samples.js'
import { extractSamples } from './extract-samples.js'

const here = dirname(fileURLToPath(import.meta.url))
const outDir = resolve(here, '../.samples/self-test')
const scratch = mkdtempSync(join(tmpdir(), 'docs-check-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

// A checker that passes everything would make the samples test worthless: prove it can fail.
test('a broken sample is reported at its Markdown line; a good one and a prelude pass', () => {
  const markdown = [
    '# Title', //                                  1
    '', //                                         2
    '```ts', //                                    3
    "import { Leaser } from '@worklease/core'", // 4
    'const leaser = new Leaser({ ttlMs: 1_000 })', // 5: backend missing
    '```', //                                      6
    '', //                                         7
    '<!-- prelude', //                             8
    "declare const backend: import('@worklease/spec').Backend", // 9
    '-->', //                                      10
    '```ts', //                                    11
    "const record = await backend.acquire('w', 'h', 1_000)", // 12
    'const token: bigint = record.fencingToken', // 13
    '```', //                                      14
    '', //                                         15
    '```sh', //                                    16
    'not typescript at all', //                    17
    '```', //                                      18
  ].join('\n')
  writeFileSync(join(scratch, 'sample.md'), markdown)
  const samples = extractSamples(join(scratch, 'sample.md'), 'sample.md')
  expect(samples.map((sample) => sample.line)).toEqual([4, 12])
  const problems = checkSamples(samples, outDir)
  const [broken, good] = samples.map((sample) => problems.get(sampleFileName(outDir, sample)))
  expect(broken).toHaveLength(1)
  expect(broken![0]).toMatch(/^sample\.md:5: .*'backend' is missing/s)
  expect(good).toEqual([])
})

test('a block marked no-check is skipped whole, and the blocks after it are still found', () => {
  const markdown = [
    '```ts no-check (needs a package this repository does not install)', // 1
    "import { Stack } from 'aws-cdk-lib'", //                                2
    '```', //                                                                3
    '', //                                                                   4
    '```ts', //                                                              5
    'const n: number = 1', //                                                6
    '```', //                                                                7
  ].join('\n')
  writeFileSync(join(scratch, 'no-check.md'), markdown)
  const samples = extractSamples(join(scratch, 'no-check.md'), 'no-check.md')
  expect(samples.map((sample) => sample.line)).toEqual([6])
})
