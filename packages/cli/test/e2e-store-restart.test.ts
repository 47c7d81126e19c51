import net from 'node:net'
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { createLeaseTable, DynamoBackend } from '@worklease/dynamodb'
import type { Backend } from '@worklease/spec'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  cleanEnv,
  isOneLine,
  MYSQL_URL,
  openTestStore,
  POSTGRES_URL,
  type RunningCli,
  serverPicked,
  spawnCli,
  type TestStore,
} from './e2e/harness.js'

/**
 * `watch` outlives a store that restarts: found by a review, where a store refusing connections for
 * 1.5 s ended it (exit 1, "connect ECONNREFUSED") on PostgreSQL, MariaDB and DynamoDB Local. A proxy
 * in front of the real server plays the restart: it drops every connection and refuses new ones for
 * a while, on the port the watch was given.
 */

const TTL = 600_000
const DOWN_MS = 1_500
const ON_POSTGRES = serverPicked('postgres', 'watch across a PostgreSQL restart, and its failures')
const ON_MARIADB = serverPicked('mariadb', 'watch across a MariaDB restart')
const DYNAMODB_LOCAL_ENDPOINT = process.env.DYNAMODB_LOCAL_ENDPOINT
if (!DYNAMODB_LOCAL_ENDPOINT)
  console.warn(
    '[worklease cli] skipping watch across a DynamoDB Local restart: DYNAMODB_LOCAL_ENDPOINT is not set',
  )

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A TCP proxy to `target` that can go away for a while and come back on the same port. */
async function restartableProxy(target: URL) {
  const sockets = new Set<net.Socket>()
  let server: net.Server
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port), target.hostname)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on('error', () => undefined)
          socket.on('close', () => sockets.delete(socket))
        }
        client.pipe(upstream)
        upstream.pipe(client)
        client.on('close', () => upstream.destroy())
        upstream.on('close', () => client.destroy())
      })
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port))
    })
  const port = await listen(0)
  const stop = async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => server.close(resolve))
  }
  return {
    port,
    /** Drops every connection, refuses new ones for `ms` (connect: ECONNREFUSED), then accepts again. */
    async restart(ms: number) {
      await stop()
      await sleep(ms)
      await listen(port)
    },
    close: stop,
  }
}

/** Resolves once `check` holds, polling; throws after `ms`. */
async function until(what: string, check: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`)
    await sleep(50)
  }
}

/** A store behind the proxy: the backend that fills it directly, and the URL through the proxy. */
interface Proxied {
  readonly backend: Backend
  storeUrl(proxyPort: number): string
  readonly args: readonly string[]
  readonly target: URL
  close(): Promise<void>
}

function sqlStore(kind: 'postgres' | 'mariadb', url: string): () => Promise<Proxied> {
  return async () => {
    const store: TestStore = await openTestStore(kind)
    const target = new URL(url)
    return {
      backend: store.backend,
      target,
      storeUrl: (port) => Object.assign(new URL(url), { host: `127.0.0.1:${port}` }).href,
      args: ['--table', store.table],
      close: () => store.close(),
    }
  }
}

async function dynamoStore(): Promise<Proxied> {
  const endpoint = DYNAMODB_LOCAL_ENDPOINT as string
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'worklease', secretAccessKey: 'worklease' },
  })
  const table = `cli_e2e_${Date.now().toString(36)}`
  const options = await createLeaseTable(client, { table, listIndex: 'worklease-list' })
  return {
    backend: new DynamoBackend({ client, ...options }),
    target: new URL(endpoint),
    storeUrl: (port) =>
      `dynamodb://127.0.0.1:${port}?region=us-east-1&table=${table}&listIndex=worklease-list`,
    args: [],
    async close() {
      await client.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined)
      client.destroy()
    },
  }
}

const STORES: Array<[string, boolean, () => Promise<Proxied>]> = [
  ['postgres', ON_POSTGRES, sqlStore('postgres', POSTGRES_URL)],
  ['mariadb', ON_MARIADB, sqlStore('mariadb', MYSQL_URL)],
  ['dynamodb', DYNAMODB_LOCAL_ENDPOINT !== undefined, dynamoStore],
]

describe.each(STORES)('watch across a restart of %s', (_name, on, open) => {
  let store: Proxied
  beforeAll(async () => {
    if (on) store = await open()
  })
  afterAll(async () => {
    await store?.close()
  })

  test.skipIf(!on)(
    'the store refuses connections for 1.5 s: one line on stderr, and the watch goes on to see what changed meanwhile',
    async () => {
      const proxy = await restartableProxy(store.target)
      let watch: RunningCli | undefined
      try {
        await store.backend.acquire('before', 'worker-a', TTL)
        watch = spawnCli(
          ['watch', '--json', '--interval', '200', '--store', store.storeUrl(proxy.port), ...store.args],
          cleanEnv({ AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' }),
        )
        const running = watch
        await until('the first read', () => running.stdout().includes('"workId":"before"'))
        const restarted = proxy.restart(DOWN_MS)
        await store.backend.acquire('during', 'worker-b', TTL)
        await restarted
        // Before: exit 1, "the store failed: connect ECONNREFUSED ...", and no line about "during".
        let code: number | null | undefined
        void running.exited.then((exit) => {
          code = exit
        })
        await until(
          'a read after the restart',
          () => running.stdout().includes('"workId":"during"') || code !== undefined,
        )
        expect({ code, stderr: running.stderr() }).toEqual({
          code: undefined,
          stderr: expect.stringMatching(
            /^worklease: lost the store \(.+\); reading again until it answers\n$/,
          ),
        })
        expect(running.stdout()).toMatch(/"change":"added","workId":"during"/)
        running.child.kill('SIGINT')
        expect(await running.exited).toBe(0)
        // One line for the one outage.
        expect(isOneLine(running.stderr())).toBe(true)
      } finally {
        watch?.child.kill('SIGKILL')
        await proxy.close()
      }
    },
    40_000,
  )
})

describe.skipIf(!ON_POSTGRES)('watch still fails on what a restart does not explain (postgres)', () => {
  test('a store refused from the first read is misnamed, not restarting: exit 1 at once', async () => {
    const proxy = await restartableProxy(new URL(POSTGRES_URL))
    await proxy.close()
    const watch = spawnCli(['watch', '--store', `postgres://postgres@127.0.0.1:${proxy.port}/test`])
    expect(await watch.exited).toBe(1)
    expect(watch.stderr()).toMatch(/^worklease: the store failed: connect ECONNREFUSED .*\n$/)
  })

  // Found by a review of the retry (session 41): a store that never came back held a scripted
  // watch (--count) forever.
  test('under --count an outage ends the watch: exit 1, not a wait for a store that may never return', async () => {
    const store = await openTestStore('postgres')
    const proxy = await restartableProxy(new URL(POSTGRES_URL))
    try {
      await store.backend.acquire('counted', 'worker-a', TTL)
      const url = `postgres://postgres@127.0.0.1:${proxy.port}/test`
      const watch = spawnCli([
        'watch',
        '--json',
        '--count',
        '50',
        '--interval',
        '200',
        '--store',
        url,
        '--table',
        store.table,
      ])
      await until('the first read', () => watch.stdout().includes('"workId":"counted"'))
      await proxy.close()
      expect(await watch.exited).toBe(1)
      expect(watch.stderr()).toMatch(/^worklease: the store failed: /)
    } finally {
      await proxy.close().catch(() => undefined)
      await store.close()
    }
  }, 30_000)

  test('a table dropped between two reads: exit 1, "does not exist", not read again and again', async () => {
    const store = await openTestStore('postgres')
    await store.backend.acquire('doomed', 'worker-a', TTL)
    const watch = spawnCli(['watch', '--json', '--interval', '200', ...store.args])
    try {
      await until('the first read', () => watch.stdout().includes('"workId":"doomed"'))
    } finally {
      // Drops the table (and closes the test's own connections).
      await store.close()
    }
    expect(await watch.exited).toBe(1)
    expect(watch.stderr()).toMatch(/^worklease: the store failed: relation ".+" does not exist\n$/)
  })
})
