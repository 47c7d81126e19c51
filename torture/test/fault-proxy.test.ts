import { connect, createServer, type Server, type Socket } from 'node:net'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { FaultProxy } from '../src/fault-proxy.js'

// An echo server that also remembers what reached it, behind the proxy.
let server: Server
let received: string
let proxy: FaultProxy

beforeEach(async () => {
  received = ''
  server = createServer((socket) => {
    socket.on('data', (chunk) => {
      received += chunk.toString()
      socket.write(chunk)
    })
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  proxy = new FaultProxy((server.address() as { port: number }).port)
  await proxy.listen()
})

afterEach(async () => {
  await proxy.close()
  await new Promise((resolve) => server.close(resolve))
})

function client(): Promise<{ socket: Socket; replies: () => string; closed: Promise<void> }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: proxy.port })
    let replies = ''
    socket.on('data', (chunk) => {
      replies += chunk.toString()
    })
    socket.on('error', () => {})
    const closed = new Promise<void>((done) => socket.once('close', () => done()))
    socket.once('connect', () => resolve({ socket, replies: () => replies, closed }))
  })
}

const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5))
}

describe('FaultProxy', () => {
  test('forwards both ways', async () => {
    const c = await client()
    c.socket.write('hello')
    await until(() => c.replies() === 'hello')
    c.socket.destroy()
  })

  test('drop-replies: the request lands, the reply is lost and the connection reset', async () => {
    const c = await client()
    proxy.setMode('drop-replies')
    c.socket.write('write-1')
    await c.closed
    expect(received).toBe('write-1')
    expect(c.replies()).toBe('')
  })

  test('black-hole holds traffic, then delivers it when lifted', async () => {
    const c = await client()
    c.socket.write('a')
    await until(() => c.replies() === 'a')
    proxy.setMode('blackhole')
    c.socket.write('b')
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(received).toBe('a')
    proxy.setMode('pass')
    await until(() => c.replies() === 'ab')
    c.socket.destroy()
  })

  test('late-delivery: the client is cut off at once, its request lands later, after a newer one', async () => {
    proxy.setLateDelivery(150)
    const first = await client()
    proxy.setMode('late-delivery')
    first.socket.write('old')
    await first.closed
    expect(received).toBe('')
    proxy.setMode('pass')
    const second = await client()
    second.socket.write('new')
    await until(() => second.replies() === 'new')
    await until(() => received === 'newold')
    expect(first.replies()).toBe('')
    second.socket.destroy()
  })

  test('dropConnections resets open connections', async () => {
    const c = await client()
    c.socket.write('x')
    await until(() => c.replies() === 'x')
    expect(proxy.dropConnections()).toBe(1)
    await c.closed
  })
})
