import { randomUUID } from 'node:crypto'
import { connect as connectSocket } from 'node:net'
import { type BackendFactory, type BackendHarness, RoundTripFailer } from '@worklease/testkit'
import { Redis, type RedisOptions } from 'ioredis'
import { RedisBackend, type RedisBackendOptions } from '../src/index.js'

/** The server the tests use: REDIS_URL, or the machine's Redis on 127.0.0.1:6379. */
export const redisUrl = (): string => process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

/**
 * A client as the README recommends: no resends behind the backend's back, so one backend call is
 * one attempt. `lazyConnect` lets the harness wait until the connection (and ioredis's INFO ready
 * check) is done before it starts counting.
 */
export async function connect(url = redisUrl(), overrides: RedisOptions = {}): Promise<Redis> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    ...overrides,
  })
  await client.connect()
  return client
}

/**
 * Counts every command the client writes to its connection. ioredis sends all of them through
 * `sendCommand`, including a script's EVALSHA and the EVAL it falls back to on NOSCRIPT, so this is
 * what reaches the server (test/round-trips.test.ts checks it against MONITOR).
 */
export function countCommands(client: Redis, onCommand: (name: string) => void): void {
  const send = client.sendCommand.bind(client)
  client.sendCommand = (command, stream) => {
    onCommand(command.name)
    return send(command, stream)
  }
}

/**
 * Makes the commands `client` sends fail, unsent, while `takeFailure()` says so: rejected as ioredis
 * rejects a command once its connection has closed (its `sendCommand` on an ended connection), with
 * the client's own "Connection is closed." error. Wraps `sendCommand` as {@link countCommands} does,
 * so apply it after that: a refused command is not counted.
 */
export function failCommands(client: Redis, takeFailure: () => boolean): void {
  const send = client.sendCommand.bind(client)
  client.sendCommand = (command, stream) => {
    if (!takeFailure()) return send(command, stream)
    command.reject(new Error('Connection is closed.'))
    return command.promise
  }
}

/** A command as MONITOR reports it: the client that sent it (`lua` inside a script) and its arguments. */
export interface MonitoredCommand {
  readonly source: string
  readonly args: readonly string[]
}

const MONITOR_LINE = /^\+\d+\.\d+ \[\d+ ([^\]]+)\]/
const QUOTED = /"((?:[^"\\]|\\.)*)"/g
const ESCAPED: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b' }
/** An argument as MONITOR quotes it: `\xHH`, `\n` and the like, and `\"` or `\\` for themselves. */
const unquote = (text: string) =>
  text.replace(/\\(x[0-9a-f]{2}|.)/g, (_, sequence: string) =>
    sequence.length === 3
      ? String.fromCharCode(Number.parseInt(sequence.slice(1), 16))
      : (ESCAPED[sequence] ?? sequence),
  )

/**
 * Watches every command the server runs (all clients: filter by `source`), through MONITOR on a
 * socket of its own. Not ioredis's `monitor()`: a line arriving while it disconnects makes its parser
 * throw "Command queue state error" out of the test, which a server busy with other test files
 * makes likely. Resolves once MONITOR is on.
 */
export async function monitorServer(
  onCommand: (command: MonitoredCommand) => void,
  url = redisUrl(),
): Promise<{ stop(): void }> {
  const { hostname, port } = new URL(url)
  const socket = connectSocket({ host: hostname, port: Number(port || 6379) })
  socket.setEncoding('utf8')
  let pending = ''
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject)
    socket.on('data', (chunk: string) => {
      pending += chunk
      let end = pending.indexOf('\r\n')
      while (end !== -1) {
        const line = pending.slice(0, end)
        pending = pending.slice(end + 2)
        end = pending.indexOf('\r\n')
        if (line === '+OK') resolve()
        const source = MONITOR_LINE.exec(line)?.[1]
        if (source !== undefined) {
          onCommand({ source, args: [...line.matchAll(QUOTED)].map((match) => unquote(match[1]!)) })
        }
      }
    })
    socket.write('MONITOR\r\n')
  })
  return { stop: () => socket.destroy() }
}

export interface RedisTestHarness extends BackendHarness {
  readonly keyPrefix: string
  /** The key of `workId`'s lease hash: the prefix, U+0000, the workId. */
  leaseKey(workId: string): string
  /** A client outside the count, for setting up or inspecting keys. */
  readonly admin: Redis
  open(options?: unknown, overrides?: Partial<RedisBackendOptions>): Promise<RedisBackend>
  roundTrips(): number
  /** Commands by name, e.g. `{ evalsha: 3, eval: 1 }`. */
  commands(): Record<string, number>
}

/**
 * A random key prefix of its own (so cases never see each other's keys in the shared server), and
 * every `open()` a separate "process": its own connection, so the race cases really race.
 */
export async function createHarness(): Promise<RedisTestHarness> {
  const keyPrefix = `worklease-test:${randomUUID()}:`
  const admin = await connect()
  const clients: Redis[] = []
  const byName: Record<string, number> = {}
  let total = 0
  const failer = new RoundTripFailer()
  const takeFailure = () => failer.take()
  const leaseKey = (workId: string) => `${keyPrefix}\u0000${workId}`
  return {
    keyPrefix,
    leaseKey,
    admin,
    async open(_options, overrides = {}) {
      const client = await connect()
      clients.push(client)
      countCommands(client, (name) => {
        total++
        byName[name] = (byName[name] ?? 0) + 1
      })
      failCommands(client, takeFailure)
      return new RedisBackend({ client, keyPrefix, ...overrides })
    },
    roundTrips: () => total,
    failNextCall: (skipRoundTrips) => failer.failNextCall(skipRoundTrips),
    commands: () => ({ ...byName }),
    // A released lease at `token`, written by hand through the admin client (outside the count).
    async seedToken(workId, token) {
      await admin.hset(leaseKey(workId), {
        token: token.toString(),
        holder: 'seeded',
        expires: '0',
        released: '1',
        clean: '1',
      })
    },
    async close() {
      try {
        const keys: string[] = []
        let cursor = '0'
        do {
          const [next, batch] = await admin.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000)
          cursor = next
          keys.push(...batch)
        } while (cursor !== '0')
        if (keys.length > 0) await admin.unlink(...keys)
      } finally {
        for (const client of clients) client.disconnect()
        admin.disconnect()
      }
    },
  }
}

/** The factory the conformance suite takes: a fresh prefix and fresh connections per case. */
export const redisFactory: BackendFactory = () => createHarness()
