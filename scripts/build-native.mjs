// Builds better-sqlite3's native module after `pnpm install`, without network access or settings.
//
// Its own install script first downloads a prebuilt binary, then falls back to node-gyp, which
// downloads Node's headers as well: on a machine that reaches only package registries both fail.
// Node ships its headers beside its binary (`<prefix>/include/node`, in Debian's package and in the
// official tarballs alike), so node-gyp is pointed there. pnpm-workspace.yaml lists better-sqlite3
// under `allowBuilds: false` so that its failing script never runs; this one runs instead.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
// Resolved from a workspace package that depends on it: pnpm does not hoist it to the root.
const requireFromKysely = createRequire(join(root, 'packages/kysely/package.json'))
const packageDir = dirname(requireFromKysely.resolve('better-sqlite3/package.json'))

function loads() {
  const probe = `new (require(${JSON.stringify(packageDir)}))(':memory:').close()`
  return spawnSync(process.execPath, ['-e', probe], { stdio: 'ignore' }).status === 0
}

if (loads()) process.exit(0)

const prefix = dirname(dirname(process.execPath))
const nodedir = existsSync(join(prefix, 'include/node/node.h')) ? [`--nodedir=${prefix}`] : []
const nodeGyp = createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js')
console.log(`building better-sqlite3 from source${nodedir.length ? ` with Node's headers in ${prefix}` : ''}`)
execFileSync(process.execPath, [nodeGyp, 'rebuild', '--release', ...nodedir], {
  cwd: packageDir,
  stdio: 'inherit',
})
if (!loads()) {
  console.error('better-sqlite3 was built but does not load')
  process.exit(1)
}
