import { once } from 'node:events'
import { type AddressInfo, createServer, type Socket, connect as tcpConnect } from 'node:net'

/**
 * A TCP proxy in front of Redis that can lose one reply: the server has run the command, the client
 * never hears back and sees its connection drop, which is what a network cut right after the server
 * answered looks like. Every connection the client opens (reconnects included) goes through it.
 */
export interface LossyProxy {
  readonly url: string
  /** The next bytes Redis sends to any client are dropped, and that client's connection is cut. */
  loseNextReply(): void
  close(): Promise<void>
}

export async function lossyProxy(target: URL): Promise<LossyProxy> {
  const sockets = new Set<Socket>()
  let armed = false
  const server = createServer((client) => {
    const upstream = tcpConnect(Number(target.port || 6379), target.hostname)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      socket.on('error', () => undefined)
    }
    client.on('data', (chunk) => upstream.write(chunk))
    upstream.on('data', (chunk) => {
      if (!armed) return void client.write(chunk)
      armed = false
      client.destroy()
      upstream.destroy()
    })
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `redis://127.0.0.1:${port}`,
    loseNextReply: () => {
      armed = true
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
