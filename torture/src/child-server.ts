import { type ChildProcess, spawn } from 'node:child_process'
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

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/** How a server child is run: as another user (a PostgreSQL server refuses to run as root). */
export interface ChildServerOptions {
  uid?: number
  gid?: number
}

/** A server child the suite can crash and start again. */
export interface ChildServer {
  readonly port: number
  /** SIGKILL of the whole process group (a crash), then a start over the same data on the same port. */
  restart(): Promise<void>
  stop(): Promise<void>
}

/**
 * A server the suite runs as a child process over a data directory that survives restarts, so a
 * restart is a crash (SIGKILL) and a start over the same data on the same port. The child leads its
 * own process group, so the crash takes every process the server forked (PostgreSQL's backends and
 * background workers) with it.
 */
export async function childServer(
  name: string,
  command: string,
  args: (port: number) => string[],
  options: ChildServerOptions = {},
): Promise<ChildServer> {
  const port = await freePort()
  let child: ChildProcess | undefined
  let stderr = ''
  const start = async (attempts = 5): Promise<void> => {
    try {
      await startOnce()
    } catch (error) {
      // A crash can leave a moment of cleanup (shared memory, a lock file) the next start trips on.
      if (attempts <= 1 || child?.exitCode === null) throw error
      await sleep(200)
      await start(attempts - 1)
    }
  }
  const startOnce = async () => {
    stderr = ''
    const proc = spawn(command, args(port), {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
      ...options,
    })
    proc.stderr!.setEncoding('utf8')
    proc.stderr!.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4096)
    })
    child = proc
    await waitForPort(port, proc, name, () => stderr)
  }
  const killGroup = (proc: ChildProcess) => {
    try {
      process.kill(-proc.pid!, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  const kill = async () => {
    const proc = child
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
    const exited = new Promise((resolve) => proc.once('exit', resolve))
    killGroup(proc)
    await exited
    // The leader's exit does not mean its group is gone: PostgreSQL refuses to start while a killed
    // backend still holds the old shared memory. (A zombie would keep answering; 3 s bounds the wait.)
    const deadline = Date.now() + 3_000
    while (groupAlive(proc.pid!) && Date.now() < deadline) await sleep(20)
  }
  const onExit = () => {
    if (child) killGroup(child)
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
