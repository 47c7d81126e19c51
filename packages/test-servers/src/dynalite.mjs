// dynalite (DynamoDB's API, in memory or on disk) on 127.0.0.1 and a free port: in the calling
// process (the dynamodb tests, the demo), in a child process so its CPU is not counted against a
// client (the bench), or as a command line for a harness that kills and restarts it (torture).
import { fork } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)

/** Tables become ACTIVE at once: the suites create one per test case. */
const INSTANT_TABLES = { createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 }

/** The installed dynalite's version, as the bench reports it. */
export function dynaliteVersion() {
  return require('dynalite/package.json').version
}

/**
 * The path of dynalite's command-line script, to run with `process.execPath` (see {@link dynaliteArgs}).
 *
 * ```js
 * spawn(process.execPath, dynaliteArgs({ port, path: dir }))
 * ```
 */
export function dynaliteCliPath() {
  return join(dirname(require.resolve('dynalite/package.json')), 'cli.js')
}

/**
 * The arguments of `node` that run dynalite on 127.0.0.1:`port`, its data in `path` (kept across a
 * restart) or in memory without one.
 *
 * ```js
 * spawn(process.execPath, dynaliteArgs({ port: 8000, path: '/tmp/dynalite' }))
 * ```
 */
export function dynaliteArgs({ port, path }) {
  return [
    dynaliteCliPath(),
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    ...(path === undefined ? [] : ['--path', path]),
    '--createTableMs',
    '0',
  ]
}

/**
 * Starts an in-memory dynalite on 127.0.0.1 and a free port, in this process (`in: 'process'`, the
 * default) or in a child process (`in: 'child'`, which exits with its parent), and resolves once it
 * listens.
 *
 * ```js
 * const server = await startDynalite({ in: 'child' })
 * // ... new DynamoDBClient({ endpoint: server.endpoint, ... }) ...
 * await server.stop()
 * ```
 */
export async function startDynalite({ in: where = 'process' } = {}) {
  return where === 'child' ? startChild() : startInProcess()
}

async function startInProcess() {
  const { default: dynalite } = await import('dynalite')
  const server = dynalite(INSTANT_TABLES)
  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const { port } = server.address()
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    pid: process.pid,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

async function startChild() {
  const script = fileURLToPath(new URL('./dynalite-child.mjs', import.meta.url))
  const child = fork(script, [], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
  const port = await new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`dynalite exited with ${code}`)))
    child.stdout.once('data', (chunk) => resolve(Number(chunk.toString().trim())))
  })
  const kill = () => child.kill('SIGKILL')
  process.once('exit', kill)
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid,
    stop: async () => {
      process.removeListener('exit', kill)
      child.kill('SIGTERM')
    },
  }
}
