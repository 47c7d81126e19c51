import { type ChildProcess, spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

async function waitForPort(port: number, child: ChildProcess, name: string, stderr: () => string) {
  const deadline = Date.now() + 60_000
  while (!(await canConnect(port))) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited:\n${stderr()}`)
    if (Date.now() > deadline) throw new Error(`${name} did not listen on ${port}:\n${stderr()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * `pid` and every process below it, read from /proc (Linux). A process group is not enough: each
 * PostgreSQL backend calls setsid() and leads its own.
 */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>()
  let entries: string[] = []
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name))
  } catch {
    return [pid] // no /proc: the group kill has to do
  }
  for (const entry of entries) {
    try {
      // The command name, in parentheses, may hold spaces: the fields after it are fixed.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      const list = children.get(ppid) ?? []
      list.push(Number(entry))
      children.set(ppid, list)
    } catch {
      // exited while we looked
    }
  }
  const tree: number[] = []
  const queue = [pid]
  while (queue.length > 0) {
    const next = queue.shift()!
    tree.push(next)
    queue.push(...(children.get(next) ?? []))
  }
  return tree
}

/** Whether `pid` still runs (a zombie, dead but not reaped, does not count). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return false
  }
}

/** How a server child is run: as another user (a PostgreSQL server refuses to run as root). */
export interface ChildServerOptions {
  uid?: number
  gid?: number
  /**
   * Whether the server answers queries yet, asked after its port opens. PostgreSQL listens while it is
   * still starting up (or recovering from the crash a restart is) and refuses connections until then.
   */
  ready?: (port: number) => Promise<boolean>
}

/** A server child the suite can crash and start again. */
export interface ChildServer {
  readonly port: number
  /** SIGKILL of the server and every process below it (a crash), then a start over the same data on the same port. */
  restart(): Promise<void>
  stop(): Promise<void>
}

/**
 * A server the suite runs as a child process over a data directory that survives restarts, so a
 * restart is a crash (SIGKILL) and a start over the same data on the same port. The crash takes every
 * process the server forked (PostgreSQL's backends and background workers) with it, and the start
 * waits until they are gone.
 */
export async function childServer(
  name: string,
  command: string,
  args: (port: number) => string[],
  options: ChildServerOptions = {},
): Promise<ChildServer> {
  const { ready, ...spawnOptions } = options
  const port = await freePort()
  let child: ChildProcess | undefined
  let stderr = ''
  const start = async (attempts = 20): Promise<void> => {
    try {
      await startOnce()
    } catch (error) {
      // A crash can leave a moment of cleanup (shared memory, a lock file) the next start trips on.
      // Retried only when the server exited (by itself or by a signal): a timeout is a real failure.
      if (attempts <= 1 || (child?.exitCode === null && child?.signalCode === null)) throw error
      await sleep(250)
      await start(attempts - 1)
    }
  }
  const startOnce = async () => {
    stderr = ''
    const proc = spawn(command, args(port), {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
      ...spawnOptions,
    })
    proc.stderr!.setEncoding('utf8')
    proc.stderr!.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4096)
    })
    child = proc
    await waitForPort(port, proc, name, () => stderr)
    const deadline = Date.now() + 60_000
    while (ready && !(await ready(port))) {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${name} exited:\n${stderr}`)
      if (Date.now() > deadline)
        throw new Error(`${name} listened on ${port} but never became ready:\n${stderr}`)
      await sleep(50)
    }
  }
  const signal = (targets: number[], name: NodeJS.Signals) => {
    for (const target of targets) {
      try {
        process.kill(target, name)
      } catch {
        // already gone
      }
    }
  }
  /**
   * SIGKILLs the server's group and every process below it; returns the pids it killed. Stopped
   * first, so that nothing forks a new child (which would lead its own group) between the scan and
   * the kill.
   */
  const killAll = (proc: ChildProcess): number[] => {
    const pid = proc.pid!
    signal([-pid, pid], 'SIGSTOP')
    let tree = processTree(pid)
    for (let round = 0; round < 3; round++) {
      signal(tree, 'SIGSTOP')
      const again = processTree(pid)
      if (again.length === tree.length) break
      tree = again
    }
    signal([-pid, ...tree], 'SIGKILL')
    return tree
  }
  const kill = async () => {
    const proc = child
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
    const exited = new Promise((resolve) => proc.once('exit', resolve))
    const killed = killAll(proc)
    await exited
    // The leader's exit does not mean the rest is gone: PostgreSQL refuses to start while a killed
    // backend still holds the old shared memory.
    const deadline = Date.now() + 10_000
    while (killed.some(running) && Date.now() < deadline) await sleep(20)
  }
  const onExit = () => {
    if (child) killAll(child)
  }
  process.once('exit', onExit)
  await start()
  return {
    port,
    restart: async () => {
      await kill()
      await start()
    },
    stop: async () => {
      process.removeListener('exit', onExit)
      await kill()
    },
  }
}
