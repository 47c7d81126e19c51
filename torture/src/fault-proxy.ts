import { connect, createServer, type Server, type Socket } from 'node:net'

/** What the proxy does to traffic, as the nemesis sets it. */
export type ProxyMode = 'pass' | 'blackhole' | 'drop-replies' | 'late-delivery'

interface Pair {
  client: Socket
  server: Socket
  /** Requests held for late delivery, once the client was cut off (`late-delivery`). */
  held?: Buffer[]
}

/**
 * A TCP proxy on 127.0.0.1 between the workers and a server, with the faults a network has:
 * - `dropConnections()`: resets every open connection (clients see ECONNRESET / closed sockets);
 * - `blackhole`: nothing is forwarded in either direction and new connections hang, until the mode
 *   changes (then the held bytes flow, as TCP retransmission would deliver them after a partition);
 * - `drop-replies`: requests reach the server but its replies are discarded and the connection is
 *   reset, so the client cannot know whether its write landed;
 * - `late-delivery`: a request is held and its client cut off at once (it gives up: the call's outcome
 *   is unknown and its next call goes over a new connection); `setLateDelivery` ms after the mode
 *   ends, the held requests reach the server after all, in the order they were held, over the
 *   connections their clients left. Calls sent after the mode ended, which did not wait, land
 *   first: an abandoned renew or checkpoint arriving after a newer one;
 * - `latency`: every chunk is delayed, in order.
 */
export class FaultProxy {
  readonly #target: { host: string; port: number }
  readonly #pairs = new Set<Pair>()
  #server: Server | undefined
  #mode: ProxyMode = 'pass'
  #latencyMs = 0
  #lateDeliveryMs = 500
  #held: (() => void)[] = []
  readonly #late = new Set<Pair>()
  port = 0
  connections = 0

  constructor(targetPort: number, targetHost = '127.0.0.1') {
    this.#target = { host: targetHost, port: targetPort }
  }

  async listen(port = 0): Promise<number> {
    const server = createServer((client) => this.#accept(client))
    this.#server = server
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => resolve())
    })
    this.port = (server.address() as { port: number }).port
    return this.port
  }

  get mode(): ProxyMode {
    return this.#mode
  }

  setMode(mode: ProxyMode): void {
    if (this.#mode === 'late-delivery' && mode !== 'late-delivery') this.#deliverHeld()
    this.#mode = mode
    if (mode !== 'blackhole') {
      const held = this.#held
      this.#held = []
      for (const resume of held) resume()
    }
  }

  setLatency(ms: number): void {
    this.#latencyMs = ms
  }

  /** How long after `late-delivery` ends the requests it held reach the server. */
  setLateDelivery(ms: number): void {
    this.#lateDeliveryMs = ms
  }

  dropConnections(): number {
    const n = this.#pairs.size
    for (const pair of this.#pairs) this.#kill(pair)
    return n
  }

  /** Holds a request of `pair` and cuts its client off; delivered after the mode ends (setMode). */
  #holdForLater(pair: Pair, chunk: Buffer): void {
    if (pair.held) {
      pair.held.push(chunk)
      return
    }
    pair.held = [chunk]
    this.#pairs.delete(pair)
    this.#late.add(pair)
    pair.client.destroy()
  }

  /** Delivers every held request, in the order they were held, `lateDeliveryMs` from now. */
  #deliverHeld(): void {
    const pairs = [...this.#late]
    setTimeout(() => {
      for (const pair of pairs) {
        if (!this.#late.delete(pair) || pair.server.destroyed) continue
        for (const held of pair.held!) pair.server.write(held)
        // FIN after the request: the server reads it, runs it, and finds nobody to answer.
        pair.server.end()
        setTimeout(() => pair.server.destroy(), 5_000).unref()
      }
    }, this.#lateDeliveryMs)
  }

  async close(): Promise<void> {
    this.setMode('pass')
    this.dropConnections()
    for (const pair of this.#late) pair.server.destroy()
    this.#late.clear()
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()))
  }

  #kill(pair: Pair): void {
    pair.client.destroy()
    pair.server.destroy()
    this.#pairs.delete(pair)
  }

  #accept(client: Socket): void {
    this.connections++
    client.setNoDelay(true)
    client.pause()
    client.on('error', () => client.destroy())
    const start = () => {
      // The client may have given up while the black-hole held its connection.
      if (client.destroyed) return
      const server = connect(this.#target)
      server.setNoDelay(true)
      const pair: Pair = { client, server }
      this.#pairs.add(pair)
      const onError = () => this.#kill(pair)
      // A client cut off for late delivery leaves its server connection to carry the held request.
      const onClientGone = () => {
        if (!pair.held) this.#kill(pair)
      }
      client.on('error', onClientGone)
      server.on('error', onError)
      client.on('close', onClientGone)
      server.on('close', onError)
      this.#pipe(pair, client, server, false)
      this.#pipe(pair, server, client, true)
      client.resume()
    }
    if (this.#mode === 'blackhole') this.#held.push(start)
    else start()
  }

  #pipe(pair: Pair, from: Socket, to: Socket, isReply: boolean): void {
    // A promise chain per direction keeps chunks in order whatever the latency does.
    let chain = Promise.resolve()
    from.on('data', (chunk: Buffer) => {
      if (isReply && this.#mode === 'drop-replies') {
        this.#kill(pair)
        return
      }
      if (!isReply && (pair.held || this.#mode === 'late-delivery')) {
        this.#holdForLater(pair, chunk)
        return
      }
      const latency = this.#latencyMs
      chain = chain.then(async () => {
        if (latency > 0) await new Promise((resolve) => setTimeout(resolve, latency))
        if (this.#mode === 'blackhole') {
          from.pause()
          await new Promise<void>((resolve) => this.#held.push(resolve))
          from.resume()
        }
        if (isReply && this.#mode === 'drop-replies') {
          this.#kill(pair)
          return
        }
        if (!to.destroyed) to.write(chunk)
      })
    })
  }
}
