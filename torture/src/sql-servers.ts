import { execFile, execFileSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { type ChildServer, childServer } from './child-server.js'

/** A server of the suite's own, on 127.0.0.1, that it may crash; `url` names its user and database. */
export interface PrivateSqlServer extends ChildServer {
  readonly url: string
}

const asRoot = () => process.getuid?.() === 0

function userIds(name: string): { uid: number; gid: number } {
  const id = (flag: string) =>
    Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim())
  return { uid: id('-u'), gid: id('-g') }
}

/**
 * The directory holding `initdb` and `postgres`, or undefined when PostgreSQL's server is not installed
 * (or the suite runs as root and there is no `postgres` user to run it as).
 */
export function postgresBinDir(): string | undefined {
  if (asRoot()) {
    try {
      userIds('postgres')
    } catch {
      return undefined
    }
  }
  const candidates: string[] = []
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim())
  } catch {
    // no pg_config on PATH
  }
  if (existsSync('/usr/lib/postgresql')) {
    for (const version of readdirSync('/usr/lib/postgresql').sort().reverse()) {
      candidates.push(join('/usr/lib/postgresql', version, 'bin'))
    }
  }
  return candidates.find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres')))
}

/** `mariadb-install-db` and `mariadbd`, or undefined when MariaDB's server is not installed. */
export function mariadbBinaries(): { installDb: string; server: string } | undefined {
  const find = (names: string[], dirs: string[]) =>
    dirs.flatMap((dir) => names.map((name) => join(dir, name))).find((path) => existsSync(path))
  const installDb = find(['mariadb-install-db', 'mysql_install_db'], ['/usr/bin', '/usr/local/bin'])
  const server = find(['mariadbd', 'mysqld'], ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin'])
  return installDb && server ? { installDb, server } : undefined
}

/**
 * A throwaway PostgreSQL cluster under `dir` (initdb, trust auth, TCP on 127.0.0.1 only, its socket in
 * `dir`). Run as the `postgres` user when the suite runs as root, since PostgreSQL refuses root.
 */
export async function privatePostgres(dir: string, binDir: string): Promise<PrivateSqlServer> {
  const home = join(dir, 'postgres')
  const data = join(home, 'data')
  mkdirSync(home, { recursive: true })
  const ids = asRoot() ? userIds('postgres') : undefined
  if (ids) {
    chmodSync(dir, 0o755) // the server's user must reach its directory
    chownSync(home, ids.uid, ids.gid)
  }
  execFileSync(
    join(binDir, 'initdb'),
    ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    { stdio: ['ignore', 'ignore', 'pipe'], ...(ids ?? {}) },
  )
  const server = await childServer(
    'PostgreSQL',
    join(binDir, 'postgres'),
    (port) => [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      home,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'shared_buffers=16MB',
      '-c',
      'log_min_messages=fatal',
    ],
    {
      ...(ids ?? {}),
      // pg_isready exits 0 only once the server accepts connections (not while it is starting up).
      ready: (port) =>
        new Promise((resolve) =>
          execFile(join(binDir, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(port)], (error) =>
            resolve(!error),
          ),
        ),
    },
  )
  return { ...server, url: `postgres://postgres@127.0.0.1:${server.port}/postgres` }
}

/**
 * A throwaway MariaDB under `dir` (mariadb-install-db, root without a password, TCP on 127.0.0.1
 * only, its socket in `dir`), with a `torture` database.
 *
 * It runs with the binary log (`sync_binlog=1`) unless `binaryLog` is false. Without it InnoDB makes a
 * commit visible to other connections before its redo log is written, so a crash can undo a commit
 * another connection already read: a LEASE_HELD from a takeover the crash then rolled back, which
 * the checker rightly calls a violation (seen in CI; `pnpm --filter @worklease/torture visibility`
 * measures it). With the binary log a commit is prepared and logged before anyone sees it.
 */
export async function privateMariadb(
  dir: string,
  binaries: { installDb: string; server: string },
  { binaryLog = true }: { binaryLog?: boolean } = {},
): Promise<PrivateSqlServer> {
  const home = join(dir, 'mariadb')
  const data = join(home, 'data')
  mkdirSync(home, { recursive: true })
  const user = asRoot() ? ['--user=root'] : []
  execFileSync(
    binaries.installDb,
    [
      '--no-defaults',
      `--datadir=${data}`,
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
      ...user,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  const server = await childServer('MariaDB', binaries.server, (port) => [
    '--no-defaults',
    `--datadir=${data}`,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    `--socket=${join(home, 'mysqld.sock')}`,
    `--pid-file=${join(home, 'mysqld.pid')}`,
    `--log-error=${join(home, 'error.log')}`,
    '--innodb-buffer-pool-size=32M',
    '--max-connections=300',
    ...(binaryLog ? [`--log-bin=${join(home, 'binlog')}`, '--sync-binlog=1'] : []),
    ...user,
  ])
  const { createConnection } = await import('mysql2/promise')
  const connection = await createConnection({ host: '127.0.0.1', port: server.port, user: 'root' })
  await connection.query('CREATE DATABASE IF NOT EXISTS torture')
  const [[settings]] = (await connection.query('SELECT @@log_bin AS logBin')) as unknown as [
    [{ logBin: number }],
  ]
  await connection.end()
  if (Boolean(settings.logBin) !== binaryLog) {
    await server.stop()
    throw new Error(`MariaDB started with log_bin=${settings.logBin}, not ${binaryLog ? 1 : 0}`)
  }
  return { ...server, url: `mysql://root@127.0.0.1:${server.port}/torture` }
}
