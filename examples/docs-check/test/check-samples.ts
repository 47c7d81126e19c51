import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import ts from 'typescript'
import type { Sample } from './extract-samples.js'

const COMPILER_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2023.d.ts', 'lib.esnext.disposable.d.ts'],
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  types: ['node'],
  strict: true,
  verbatimModuleSyntax: true,
  skipLibCheck: true,
  noEmit: true,
}

/** Where a sample is written, under `outDir`. */
export function sampleFileName(outDir: string, sample: Sample): string {
  return resolve(outDir, `${sample.file.replaceAll(/[/.]/g, '_')}_L${sample.line}.ts`)
}

/**
 * Writes every sample as its own ES module under `outDir` (wiped first) and type-checks them all in
 * one program. Returns each sample's problems, keyed by its file name, located in the Markdown.
 * `outDir` must sit inside a package whose node_modules resolve what the samples import.
 */
export function checkSamples(
  samples: readonly Sample[],
  outDir: string,
  filePreludes: Readonly<Record<string, string>> = {},
): Map<string, string[]> {
  rmSync(outDir, { recursive: true, force: true })
  mkdirSync(outDir, { recursive: true })
  // Top-level await needs ES modules: the folder is a "type": "module" package of its own.
  writeFileSync(join(outDir, 'package.json'), '{ "type": "module" }\n')
  const bySource = new Map<string, { sample: Sample; preludeLines: number }>()
  for (const sample of samples) {
    const prelude = [filePreludes[sample.file] ?? '', sample.prelude].filter(Boolean).join('\n')
    // `export {}` makes a sample without imports a module too, so samples never share globals.
    const name = sampleFileName(outDir, sample)
    writeFileSync(name, `${prelude}\n${sample.code}\nexport {}\n`)
    bySource.set(name, { sample, preludeLines: prelude.split('\n').length })
  }
  const program = ts.createProgram([...bySource.keys()], COMPILER_OPTIONS)
  const problems = new Map<string, string[]>([...bySource.keys()].map((name) => [name, []]))
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')
    const source = diagnostic.file
    const entry = source ? bySource.get(resolve(source.fileName)) : undefined
    if (!source || !entry) {
      // A problem outside the samples (a package's own types): every sample reports it.
      for (const list of problems.values()) list.push(`${source?.fileName ?? '(global)'}: ${message}`)
      continue
    }
    const { line } = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0)
    const offset = line - entry.preludeLines
    const where =
      offset >= 0 ? `${entry.sample.file}:${entry.sample.line + offset}` : `${entry.sample.file} (prelude)`
    problems.get(resolve(source.fileName))!.push(`${where}: ${message}`)
  }
  return problems
}
