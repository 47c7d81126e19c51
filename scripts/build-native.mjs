// Builds better-sqlite3's native module after `pnpm install`, without network access or settings.
//
// Its own install script first downloads a prebuilt binary, then falls back to node-gyp, which
// downloads Node's headers as well: on a machine that reaches only package registries both fail.
// Node ships its headers beside its binary (`<prefix>/include/node`, in Debian's package and in the
// official tarballs alike), so node-gyp is pointed there. pnpm-workspace.yaml lists better-sqlite3
// under `allowBuilds: false` so that its failing script never runs; this one runs instead.
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, renameSync } from 'node:fs'
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

// One built binary per Node ABI, kept in node_modules/.cache (node-gyp's rebuild empties the package's
// build/) and in WORKLEASE_NATIVE_CACHE when set, so a later install on the same machine reuses it:
// switching between Node versions, as CI's other-Node runs do and back, then copies a file instead of
// compiling SQLite again (a minute each time).
const { version } = requireFromKysely('better-sqlite3/package.json')
const binary = join(packageDir, 'build/Release/better_sqlite3.node')
const kept = `better-sqlite3-${version}-${process.platform}-${process.arch}-abi${process.versions.modules}.node`
const keptIn = [join(root, 'node_modules/.cache/better-sqlite3'), process.env.WORKLEASE_NATIVE_CACHE].filter(
  Boolean,
)

function keep() {
  for (const dir of keptIn) {
    try {
      mkdirSync(dir, { recursive: true })
      // Renamed into place: another install reading the cache never sees half a file.
      const partial = join(dir, `${kept}.${process.pid}.partial`)
      copyFileSync(binary, partial)
      renameSync(partial, join(dir, kept))
    } catch (error) {
      // A copy is a shortcut for next time: one that cannot be kept costs a build then, nothing now.
      console.warn(`better-sqlite3: could not keep a copy in ${dir}: ${error.message}`)
    }
  }
}

if (loads()) {
  keep()
  process.exit(0)
}
for (const dir of keptIn) {
  if (!existsSync(join(dir, kept))) continue
  mkdirSync(dirname(binary), { recursive: true })
  copyFileSync(join(dir, kept), binary)
  if (loads()) {
    console.log(
      `better-sqlite3 for Node ABI ${process.versions.modules}: the binary built before, from ${dir}`,
    )
    keep()
    process.exit(0)
  }
}

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
keep()
