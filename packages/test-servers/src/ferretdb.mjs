#!/usr/bin/env node
// Builds (once) and starts FerretDB v1.24.2, the MongoDB wire-protocol server the tests run against
// when neither MONGODB_URL nor FERRETDB2_URL is set. No MongoDB server is needed on the machine; only
// Go, which fetches FerretDB's source from the Go module proxy on the first build. It also builds
// FerretDB v2.7.0 for servers.sh, which runs it on PostgreSQL 18 with DocumentDB.
//
//   node src/ferretdb.mjs build [version]   builds or reuses the cached binary, prints its path
//   node src/ferretdb.mjs start             starts a throwaway v1.24.2, prints its URL, stops on Ctrl-C
// (also `pnpm --filter @worklease/test-servers ferretdb:build` and `ferretdb:start`)
import { spawn, spawnSync } from 'node:child_process'
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { connect, createServer } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const FERRETDB_VERSION = 'v1.24.2'

/** From v2 on, the Go module path carries the major version. */
function modulePath(version) {
  const major = Number(/^v(\d+)\./.exec(version)?.[1])
  return major >= 2 ? `github.com/FerretDB/FerretDB/v${major}` : 'github.com/FerretDB/FerretDB'
}

/** Where the binary is cached: `${XDG_CACHE_HOME:-~/.cache}/worklease/ferretdb-<version>/ferretdb`. */
export function ferretdbBinaryPath(version = FERRETDB_VERSION) {
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache')
  return join(cache, 'worklease', `ferretdb-${version}`, 'ferretdb')
}

function cachedVersionMatches(binary, version) {
  if (!existsSync(binary)) return false
  const result = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 30_000 })
  // `--version` prints "version: v1.24.2" among other lines; anything else (a crash, another
  // version) means the cache is stale and is rebuilt.
  return result.status === 0 && new RegExp(`^version:\\s*${version}$`, 'm').test(result.stdout)
}

function go(args, options) {
  // GOTOOLCHAIN=local: use the installed Go rather than downloading the toolchain FerretDB's go.mod
  // names; any Go >= 1.24 builds it.
  const env = { ...process.env, GOTOOLCHAIN: 'local', CGO_ENABLED: '0', GOFLAGS: '-mod=mod -buildvcs=false' }
  const result = spawnSync('go', args, { encoding: 'utf8', env, ...options })
  if (result.error) {
    throw new Error(`cannot run \`go\` (${result.error.message}); install Go >= 1.24 to build FerretDB`)
  }
  if (result.status !== 0) throw new Error(`go ${args.join(' ')} failed:\n${result.stderr}`)
  return result.stdout
}

/**
 * Returns the path of a FerretDB binary of `version` (v1.24.2 unless told), building it first unless
 * the cached one reports that version.
 *
 * `go install ...@v1.24.2` is not enough: FerretDB (v1 and v2 alike) embeds
 * build/version/version.txt, which only its own `task gen-version` writes, and the binary panics at
 * start without it. So this copies the module source out of the (read-only) Go module cache, writes
 * the version file, and builds there.
 */
export function buildFerretdb({ version = FERRETDB_VERSION, log = console.error } = {}) {
  const binary = ferretdbBinaryPath(version)
  if (cachedVersionMatches(binary, version)) return binary
  const started = Date.now()
  log(`building FerretDB ${version} into ${binary} (about a minute the first time)`)
  const work = mkdtempSync(join(tmpdir(), 'worklease-ferretdb-build-'))
  try {
    const { Dir: moduleDir } = JSON.parse(
      go(['mod', 'download', '-json', `${modulePath(version)}@${version}`], { cwd: work }),
    )
    const source = join(work, 'src')
    cpSync(moduleDir, source, { recursive: true })
    makeWritable(source)
    writeFileSync(join(source, 'build', 'version', 'version.txt'), `${version}\n`)
    mkdirSync(join(binary, '..'), { recursive: true })
    // Built next to its final place and renamed, so a concurrent run never sees half a binary.
    const partial = `${binary}.${process.pid}.partial`
    go(['build', '-trimpath', '-o', partial, './cmd/ferretdb'], { cwd: source })
    renameSync(partial, binary)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  if (!cachedVersionMatches(binary, version))
    throw new Error(`the FerretDB built at ${binary} does not report ${version}`)
  log(`built FerretDB ${version} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return binary
}

function makeWritable(dir) {
  // Files from the module cache are read-only; the copy must accept version.txt and be removable.
  chmodSync(dir, 0o755)
  spawnSync('chmod', ['-R', 'u+w', dir])
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

function canConnect(port) {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/**
 * The command line of a FerretDB on 127.0.0.1:`port` with its SQLite backend and all state under
 * `dir` (which must hold `data/` and `state/`). Exported so a harness that restarts the server over
 * the same data (the torture suite) starts it exactly as the tests do.
 *
 * ```js
 * spawn(buildFerretdb(), ferretdbArgs({ dir, port }))
 * ```
 */
export function ferretdbArgs({ dir, port, logLevel = 'warn' }) {
  return [
    `--listen-addr=127.0.0.1:${port}`,
    '--handler=sqlite',
    `--sqlite-url=file:${join(dir, 'data')}/`,
    `--state-dir=${join(dir, 'state')}`,
    '--telemetry=disable',
    // The debug HTTP listener defaults to a fixed port (127.0.0.1:8088), which would clash between
    // parallel runs; nothing here needs it.
    '--debug-addr=-',
    `--log-level=${logLevel}`,
  ]
}

/**
 * Starts FerretDB on 127.0.0.1 on a free port, with its SQLite backend and all state in a fresh
 * temporary directory, and resolves once it accepts connections.
 *
 * ```js
 * const server = await startFerretdb()
 * // ... use server.url ...
 * await server.stop()
 * ```
 */
export async function startFerretdb({ binary = buildFerretdb(), log = console.error } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'worklease-ferretdb-'))
  mkdirSync(join(dir, 'data'))
  mkdirSync(join(dir, 'state'))
  const port = await freePort()
  const args = ferretdbArgs({ dir, port })
  const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-8192)
  })
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  let running = true
  // If the test run dies without its teardown, do not leave the server behind.
  const killOnExit = () => child.kill('SIGKILL')
  process.once('exit', killOnExit)
  exited.then(() => {
    running = false
    process.removeListener('exit', killOnExit)
  })

  const stop = async () => {
    if (running) {
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await exited
      clearTimeout(timer)
    }
    rmSync(dir, { recursive: true, force: true })
  }

  const deadline = Date.now() + 30_000
  while (!(await canConnect(port))) {
    if (!running) {
      await stop()
      throw new Error(`FerretDB exited before accepting connections:\n${stderr}`)
    }
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`FerretDB did not accept connections on 127.0.0.1:${port} within 30 s:\n${stderr}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  log(`FerretDB ${FERRETDB_VERSION} listening on 127.0.0.1:${port} (pid ${child.pid})`)
  return { url: `mongodb://127.0.0.1:${port}/`, port, pid: child.pid, stop }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const command = process.argv[2]
  if (command === 'build') {
    console.log(buildFerretdb({ version: process.argv[3] ?? FERRETDB_VERSION }))
  } else if (command === 'start') {
    const server = await startFerretdb()
    console.log(server.url)
    const shutdown = () => server.stop().then(() => process.exit(0))
    process.once('SIGINT', shutdown)
    process.once('SIGTERM', shutdown)
  } else {
    console.error('usage: node src/ferretdb.mjs build [version] | start')
    process.exit(2)
  }
}
