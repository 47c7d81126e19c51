import { type ChildProcessWithoutNullStreams, execFile, execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { createLeaseTable, dropLeaseTable, KyselyBackend, type LeaseDialect } from '@worklease/kysely'
import Database from 'better-sqlite3'
import { Kysely, MysqlDialect, PostgresDialect, SqliteDialect } from 'kysely'
import { createPool } from 'mysql2'
import pg from 'pg'

/** The built binary: these tests run what `npx worklease` runs (turbo builds it before `test`). */
export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url))

export const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const MYSQL_URL = process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

export interface CliResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * The environment of a run as a script sees it: no colour forcing inherited from the test runner,
 * no store from the developer's shell.
 */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ['FORCE_COLOR', 'NO_COLOR', 'WORKLEASE_STORE', 'TERM']) delete env[name]
  return { ...env, ...extra }
}

/** Runs `node dist/cli.js ...args` with stdout, stderr and stdin all pipes (stdin closed at once). */
export function cli(args: readonly string[], env: NodeJS.ProcessEnv = cleanEnv()): Promise<CliResult> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run pnpm build (turbo's test task does)`)
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { env, timeout: 20_000, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
    child.stdin?.end()
  })
}

/** A command line still running: its child, what it wrote so far, and its exit code once it ends. */
export interface RunningCli {
  readonly child: ChildProcessWithoutNullStreams
  stdout(): string
  stderr(): string
  readonly exited: Promise<number | null>
}

/** Starts `node dist/cli.js ...args` and keeps what it writes, for commands that run on (watch). */
export function spawnCli(args: readonly string[], env: NodeJS.ProcessEnv = cleanEnv()): RunningCli {
  const child = spawn(process.execPath, [CLI, ...args], { env })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  return { child, stdout: () => stdout, stderr: () => stderr, exited }
}

/** Words as one POSIX shell command line. */
export const shellQuote = (words: readonly string[]): string =>
  words.map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(' ')

/** Where tmux is, or undefined: the terminal tests then skip, saying so. */
export const TMUX = (() => {
  try {
    return execFileSync('which', ['tmux'], { encoding: 'utf8' }).trim() || undefined
  } catch {
    return undefined
  }
})()

/**
 * A tmux server of the test's own, whose panes are terminals of a known size: capture-pane reads a
 * screen as a person sees it (escapes rendered, not printed). Panes get the clean environment.
 */
export class TmuxServer {
  readonly #dir = mkdtempSync(join(tmpdir(), 'worklease-tmux-'))
  readonly #socket = join(this.#dir, 'tmux.sock')

  call(...args: string[]): Promise<{ stdout: string }> {
    return promisify(execFile)(TMUX as string, ['-S', this.#socket, '-f', '/dev/null', ...args], {
      env: cleanEnv(),
    })
  }

  /** Runs `words` in a new pane; the pane stays 60 s after, so what a crash wrote stays on screen. */
  async start(
    session: string,
    size: { x: number; y: number },
    words: readonly string[],
    then = '',
  ): Promise<void> {
    const command = `${shellQuote(words)}${then ? `; ${then}` : ''}; sleep 60`
    await this.call('new-session', '-d', '-s', session, '-x', String(size.x), '-y', String(size.y), command)
  }

  /**
   * Runs bash `script` in a new pane, with no shell of tmux's around it: Ctrl-C signals the pane's
   * whole foreground process group, and a default shell that dies of it (dash, as /bin/sh) closed the
   * pane before its screen was read. The trap keeps this bash going after a command the signal
   * killed, so that the script's next lines still show (`echo EXIT=$?` shows 130); the command
   * itself starts with SIGINT's default action, as from any shell. The pane stays 60 s after.
   */
  async startScript(session: string, size: { x: number; y: number }, script: string): Promise<void> {
    await this.call(
      'new-session',
      '-d',
      '-s',
      session,
      '-x',
      String(size.x),
      '-y',
      String(size.y),
      'bash',
      '-c',
      `trap : INT; ${script}; sleep 60`,
    )
  }

  async screen(session: string, { escapes = false } = {}): Promise<string> {
    return (await this.call('capture-pane', '-p', ...(escapes ? ['-e'] : []), '-t', session)).stdout
  }

  /** The screen once it satisfies `predicate`, within 15 s. */
  async until(session: string, predicate: (text: string) => boolean): Promise<string> {
    const deadline = Date.now() + 15_000
    let text = ''
    while (Date.now() < deadline) {
      text = await this.screen(session).catch(() => '')
      if (predicate(text)) return text
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`the screen never showed what was expected:\n${text}`)
  }

  keys(session: string, ...keys: string[]): Promise<unknown> {
    return this.call('send-keys', '-t', session, ...keys)
  }

  async close(): Promise<void> {
    await this.call('kill-server').catch(() => undefined)
    rmSync(this.#dir, { recursive: true, force: true })
  }
}

/** A store the tests own: a database handle, a backend on a table of its own, and its --store URL. */
export interface TestStore {
  readonly name: string
  readonly url: string
  readonly table: string
  readonly backend: KyselyBackend
  /** The arguments that name this store and table. */
  readonly args: readonly string[]
  close(): Promise<void>
}

export type StoreKind = 'sqlite' | 'postgres' | 'mariadb'

/**
 * Whether tmux is here for the tests `what` names; when it is not, prints that they are skipped and
 * how to install it: no skip is silent.
 */
export function tmuxPicked(what: string): boolean {
  if (!TMUX) console.warn(`[worklease cli] skipping ${what}: tmux is not installed (apt-get install tmux)`)
  return TMUX !== undefined
}

/**
 * Whether `WORKLEASE_DIALECTS` picks `server` (unset: every server; `mysql` picks MariaDB too), as in
 * the kysely tests. When it does not, prints which tests are skipped and why: no skip is silent.
 */
export function serverPicked(server: StoreKind | 'mongodb', skipped: string): boolean {
  const wanted = process.env.WORKLEASE_DIALECTS?.split(',').map((name) => name.trim())
  const on = !wanted || wanted.includes(server) || (server === 'mariadb' && wanted.includes('mysql'))
  if (!on) console.warn(`[worklease cli] skipping ${skipped}: ${server} is not in WORKLEASE_DIALECTS`)
  return on
}

export async function openTestStore(kind: StoreKind): Promise<TestStore> {
  const table = `cli_e2e_${randomBytes(5).toString('hex')}`
  let db: Kysely<unknown>
  let url: string
  let dialect: LeaseDialect | undefined
  let dir: string | undefined
  switch (kind) {
    case 'sqlite': {
      dir = mkdtempSync(join(tmpdir(), 'worklease-cli-e2e-'))
      const file = join(dir, 'leases.db')
      db = new Kysely({ dialect: new SqliteDialect({ database: new Database(file) }) })
      url = `sqlite:${file}`
      dialect = 'sqlite'
      break
    }
    case 'postgres':
      db = new Kysely({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: POSTGRES_URL, max: 2 }) }),
      })
      url = POSTGRES_URL
      dialect = 'postgres'
      break
    case 'mariadb':
      db = new Kysely({
        dialect: new MysqlDialect({ pool: createPool({ uri: MYSQL_URL, connectionLimit: 2 }) }),
      })
      url = MYSQL_URL
      break
  }
  await createLeaseTable(db, { table, ...(dialect ? { dialect } : {}) })
  const backend = new KyselyBackend({ db, table, ...(dialect ? { dialect } : {}) })
  return {
    name: kind,
    url,
    table,
    backend,
    args: ['--store', url, '--table', table],
    async close() {
      await dropLeaseTable(db, { table, ...(dialect ? { dialect } : {}) }).catch(() => undefined)
      await db.destroy()
      if (dir) rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** One line of stderr, and no stack trace: what every failure must look like. */
export function isOneLine(text: string): boolean {
  return text.trimEnd().split('\n').length === 1 && !/^\s+at /m.test(text)
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for escapes is the point
export const ANSI = /\u001b\[/
