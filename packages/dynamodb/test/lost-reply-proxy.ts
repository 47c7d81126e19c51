import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * An HTTP proxy on 127.0.0.1 in front of the DynamoDB endpoint that can lose replies: the request
 * reaches the server and is applied, then the proxy destroys the client's socket instead of answering,
 * exactly what a network failure after the write looks like to the SDK.
 */
export interface LostReplyProxy {
  readonly endpoint: string
  /** Loses the reply of the next `count` requests for `operation` (e.g. `'UpdateItem'`). */
  loseNextReplies(operation: string, count?: number): void
  /** Requests forwarded to the server, by operation. */
  readonly forwarded: Record<string, number>
  close(): Promise<void>
}

export async function startLostReplyProxy(upstream: string): Promise<LostReplyProxy> {
  const target = new URL(upstream)
  const toLose: Record<string, number> = {}
  const forwarded: Record<string, number> = {}
  const server = createServer((incoming, outgoing) => {
    const operation =
      String(incoming.headers['x-amz-target'] ?? '')
        .split('.')
        .pop() ?? ''
    const body: Buffer[] = []
    incoming.on('data', (chunk: Buffer) => body.push(chunk))
    incoming.on('end', () => {
      forwarded[operation] = (forwarded[operation] ?? 0) + 1
      const upstreamRequest = request(
        {
          host: target.hostname,
          port: target.port,
          method: incoming.method,
          path: incoming.url,
          headers: incoming.headers,
        },
        (reply) => {
          const replyBody: Buffer[] = []
          reply.on('data', (chunk: Buffer) => replyBody.push(chunk))
          reply.on('end', () => {
            // The server has answered, so the write is applied (or refused) by now.
            if ((toLose[operation] ?? 0) > 0) {
              toLose[operation]!--
              incoming.socket.destroy()
              return
            }
            outgoing.writeHead(reply.statusCode ?? 502, reply.headers)
            outgoing.end(Buffer.concat(replyBody))
          })
        },
      )
      upstreamRequest.on('error', () => incoming.socket.destroy())
      upstreamRequest.end(Buffer.concat(body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    forwarded,
    loseNextReplies(operation, count = 1) {
      toLose[operation] = (toLose[operation] ?? 0) + count
    },
    close() {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
