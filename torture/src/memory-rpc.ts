import { connect, createServer, type Server, type Socket } from 'node:net'
import { MemoryBackend, type StoredLease } from '@worklease/memory'
import {
  type Backend,
  type BackendCapabilities,
  type CheckpointRead,
  type Clock,
  createLeaseRecord,
  FencedError,
  isWorkleaseError,
  LeaseExpiredError,
  LeaseHeldError,
  type LeaseHolder,
  type LeasePage,
  type LeaseRecord,
  type ListOptions,
  validateAcquireArgs,
  validateCheckpointArgs,
  validateRecordArgs,
  validateRenewArgs,
} from '@worklease/spec'

// The reference MemoryBackend lives in one process; worker processes reach it over a line-delimited
// JSON protocol on TCP, so the fault proxy can sit in between as it does for real servers. Each request
// carries the caller's clock reading, because MemoryBackend is a client-clock backend.

interface WireRecord {
  workId: string
  holderId: string
  token: string
  expiresAt: number
}

interface Request {
  id: number
  op: 'acquire' | 'checkpoint' | 'renew' | 'release' | 'readCheckpoint' | 'list'
  now: number
  workId?: string
  holderId?: string
  ttl?: number
  record?: WireRecord
  state?: string
  /** Checkpoint: the sender's order among its checkpoints (see MemoryServer). */
  seq?: number
  /** List: the page wanted. */
  list?: { prefix?: string; cursor?: string; limit?: number }
}

/** The lease a LEASE_HELD names, on the wire. */
interface WireHolder {
  holderId: string
  token: string
  expiresAt: number
  expiresInMs: number
}

const toWireHolder = (h: LeaseHolder): WireHolder => ({
  holderId: h.holderId,
  token: h.fencingToken.toString(),
  expiresAt: h.expiresAt.getTime(),
  expiresInMs: h.expiresInMs,
})

const fromWireHolder = (h: WireHolder): LeaseHolder => ({
  holderId: h.holderId,
  fencingToken: BigInt(h.token),
  expiresAt: new Date(h.expiresAt),
  expiresInMs: h.expiresInMs,
})

interface WireListing {
  workId: string
  holderId: string
  token: string
  expiresAt: number
  released: boolean
  free: boolean
  checkpointBytes: number | null
}

const toWire = (r: LeaseRecord): WireRecord => ({
  workId: r.workId,
  holderId: r.holderId,
  token: r.fencingToken.toString(),
  expiresAt: r.expiresAt.getTime(),
})
const fromWire = (r: WireRecord): LeaseRecord =>
  createLeaseRecord(r.workId, r.holderId, BigInt(r.token), r.expiresAt)

/**
 * Deliberate bugs the memory server can have, to prove the whole pipeline (workers, history, checker)
 * catches a broken store: `checkpoint-unfenced` stores any holder's checkpoint, valid or not;
 * `token-reuse` hands out the previous token again on every third takeover;
 * `renew-overwrites-expiry` sets expiry = now + ttl on renew, even when that is earlier than stored;
 * `checkpoint-overwrites-state` stores every checkpoint that lands, whatever order it was sent in.
 */
export type MemoryBug =
  | 'checkpoint-unfenced'
  | 'token-reuse'
  | 'renew-overwrites-expiry'
  | 'checkpoint-overwrites-state'

/**
 * Serves one MemoryBackend (one store) on 127.0.0.1. Acquire, release and readCheckpoint are the
 * reference MemoryBackend's; renew and checkpoint follow the contract as it now reads (issue 14),
 * ahead of the reference backend: they set expiresAt = max(stored, now + ttl), and a checkpoint
 * carries its sender's sequence number, so one with a sequence <= the last stored for the same token
 * (sent earlier, landing late) succeeds without changing the state. Acquire resets the sequence.
 */
export class MemoryServer {
  readonly #bug: MemoryBug | undefined
  #takeovers = 0
  /** Per workId: the token and sequence of the checkpoint whose state is stored. */
  readonly #checkpointSeq = new Map<string, { token: bigint; seq: number }>()
  #server: Server | undefined
  readonly #sockets = new Set<Socket>()
  port = 0

  constructor(bug?: MemoryBug) {
    this.#bug = bug
  }

  async listen(): Promise<number> {
    let now = 0
    const backend = new MemoryBackend({ clock: { now: () => now } })
    const server = createServer((socket) => {
      this.#sockets.add(socket)
      socket.on('close', () => this.#sockets.delete(socket))
      socket.on('error', () => socket.destroy())
      let buffer = ''
      socket.setEncoding('utf8')
      socket.on('data', (chunk: string) => {
        buffer += chunk
        let nl = buffer.indexOf('\n')
        while (nl >= 0) {
          const line = buffer.slice(0, nl)
          buffer = buffer.slice(nl + 1)
          nl = buffer.indexOf('\n')
          const request = JSON.parse(line) as Request
          // MemoryBackend reads its clock synchronously inside each call, before any await.
          now = request.now
          const reply = (body: object) => {
            if (!socket.destroyed) socket.write(`${JSON.stringify({ id: request.id, ...body })}\n`)
          }
          this.#call(backend, request).then(
            (result) => reply({ ok: true, result }),
            (error: unknown) =>
              reply({
                ok: false,
                code: isWorkleaseError(error) ? error.code : undefined,
                message: String(error),
                ...(error instanceof LeaseHeldError &&
                  error.holder && { holder: toWireHolder(error.holder) }),
              }),
          )
        }
      })
    })
    this.#server = server
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    this.port = (server.address() as { port: number }).port
    return this.port
  }

  #call(backend: MemoryBackend, r: Request): Promise<unknown> {
    const stored = backend.store.leases.get(r.record?.workId ?? r.workId ?? '')
    if (this.#bug === 'checkpoint-unfenced' && r.op === 'checkpoint' && stored) {
      stored.state = Buffer.from(r.state!, 'base64')
      return Promise.resolve(undefined)
    }
    if (this.#bug === 'token-reuse' && r.op === 'acquire' && stored && stored.fencingToken > 1n) {
      const free = stored.released || stored.expiresAtMs <= r.now
      if (free && ++this.#takeovers % 3 === 0) stored.fencingToken--
    }
    switch (r.op) {
      case 'acquire':
        return backend.acquire(r.workId!, r.holderId!, r.ttl!).then((record) => {
          this.#checkpointSeq.delete(record.workId)
          return toWire(record)
        })
      case 'checkpoint':
        return this.#checkpoint(backend, r)
      case 'renew':
        return this.#renew(backend, r)
      case 'release':
        return backend.release(fromWire(r.record!))
      case 'readCheckpoint':
        return backend.readCheckpoint(fromWire(r.record!)).then(({ state, cleanHandoff }) => ({
          state: state ? Buffer.from(state).toString('base64') : null,
          cleanHandoff,
        }))
      case 'list':
        // Pools find their members by listing the group (see docs/pools.md).
        return backend.list(r.list).then((page) => ({
          leases: page.leases.map(
            (l): WireListing => ({
              workId: l.workId,
              holderId: l.holderId,
              token: l.fencingToken.toString(),
              expiresAt: l.expiresAt.getTime(),
              released: l.released,
              free: l.free,
              checkpointBytes: l.checkpointBytes,
            }),
          ),
          now: page.now.getTime(),
          ...(page.cursor !== undefined ? { cursor: page.cursor } : {}),
        }))
    }
  }

  /** The stored lease a record is valid for, as MemoryBackend decides it. */
  #valid(backend: MemoryBackend, wire: WireRecord): StoredLease {
    const record = fromWire(wire)
    const lease = backend.store.leases.get(record.workId)
    if (
      !lease ||
      lease.released ||
      lease.fencingToken !== record.fencingToken ||
      lease.holderId !== record.holderId
    )
      throw new FencedError()
    return lease
  }

  async #renew(backend: MemoryBackend, r: Request): Promise<void> {
    validateRenewArgs(fromWire(r.record!), r.ttl!, undefined)
    const lease = this.#valid(backend, r.record!)
    if (lease.expiresAtMs <= r.now) throw new LeaseExpiredError()
    lease.expiresAtMs =
      this.#bug === 'renew-overwrites-expiry' ? r.now + r.ttl! : Math.max(lease.expiresAtMs, r.now + r.ttl!)
  }

  async #checkpoint(backend: MemoryBackend, r: Request): Promise<void> {
    const state = Buffer.from(r.state!, 'base64')
    validateCheckpointArgs(fromWire(r.record!), state, r.ttl!, backend.capabilities.maxStateBytes, undefined)
    const lease = this.#valid(backend, r.record!)
    const workId = r.record!.workId
    const stored = this.#checkpointSeq.get(workId)
    const seq = r.seq ?? 0
    const newer = !stored || stored.token !== lease.fencingToken || seq > stored.seq
    if (newer || this.#bug === 'checkpoint-overwrites-state') {
      lease.state = new Uint8Array(state)
      this.#checkpointSeq.set(workId, { token: lease.fencingToken, seq })
    }
    lease.expiresAtMs = Math.max(lease.expiresAtMs, r.now + r.ttl!)
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy()
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()))
  }
}

/** A Backend whose store is a {@link MemoryServer} in another process. */
export class MemoryRpcBackend implements Backend {
  readonly capabilities: BackendCapabilities = Object.freeze({
    clock: 'client',
    maxStateBytes: 1024 * 1024,
    crossConnectionAtomic: true,
    // LEASE_HELD names the lease in the way, as MemoryBackend does: the Leaser adopts its own from it.
    reportsHolder: true,
    list: true,
  })
  readonly #port: number
  readonly #clock: Clock
  #socket: Socket | undefined
  #nextId = 0
  // A lease is held by one process, which sends its checkpoints one after another through this
  // backend: a counter per backend orders each lease's checkpoints as they were sent.
  #checkpointSeq = 0
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>()

  constructor(port: number, clock: Clock) {
    this.#port = port
    this.#clock = clock
  }

  #connection(): Socket {
    if (this.#socket && !this.#socket.destroyed) return this.#socket
    const socket = connect({ host: '127.0.0.1', port: this.#port })
    socket.setNoDelay(true)
    socket.setEncoding('utf8')
    let buffer = ''
    socket.on('data', (chunk: string) => {
      buffer += chunk
      let nl = buffer.indexOf('\n')
      while (nl >= 0) {
        const reply = JSON.parse(buffer.slice(0, nl)) as {
          id: number
          ok: boolean
          result?: unknown
          code?: string
          message?: string
          holder?: WireHolder
        }
        buffer = buffer.slice(nl + 1)
        nl = buffer.indexOf('\n')
        const waiter = this.#pending.get(reply.id)
        this.#pending.delete(reply.id)
        if (!waiter) continue
        if (reply.ok) waiter.resolve(reply.result)
        else if (reply.code === 'LEASE_HELD')
          waiter.reject(
            new LeaseHeldError(undefined, reply.holder && { holder: fromWireHolder(reply.holder) }),
          )
        else if (reply.code === 'FENCED') waiter.reject(new FencedError())
        else if (reply.code === 'LEASE_EXPIRED') waiter.reject(new LeaseExpiredError())
        else waiter.reject(new Error(`memory server: ${reply.message}`))
      }
    })
    const fail = (error?: Error) => {
      if (this.#socket === socket) this.#socket = undefined
      socket.destroy()
      const pending = [...this.#pending.values()]
      this.#pending.clear()
      for (const waiter of pending) waiter.reject(new Error(`connection lost: ${error?.message ?? 'closed'}`))
    }
    socket.on('error', fail)
    socket.on('close', () => fail())
    this.#socket = socket
    return socket
  }

  #send(request: Omit<Request, 'id' | 'now'>): Promise<any> {
    const id = this.#nextId++
    const socket = this.#connection()
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject })
      socket.write(`${JSON.stringify({ ...request, id, now: this.#clock.now() })}\n`)
    })
  }

  async acquire(workId: string, holderId: string, ttlMs: number): Promise<LeaseRecord> {
    validateAcquireArgs(workId, holderId, ttlMs, undefined)
    return fromWire(await this.#send({ op: 'acquire', workId, holderId, ttl: ttlMs }))
  }

  async checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number): Promise<void> {
    validateCheckpointArgs(record, state, ttlMs, this.capabilities.maxStateBytes, undefined)
    await this.#send({
      op: 'checkpoint',
      record: toWire(record),
      ttl: ttlMs,
      state: Buffer.from(state).toString('base64'),
      seq: ++this.#checkpointSeq,
    })
  }

  async renew(record: LeaseRecord, ttlMs: number): Promise<void> {
    validateRenewArgs(record, ttlMs, undefined)
    await this.#send({ op: 'renew', record: toWire(record), ttl: ttlMs })
  }

  async release(record: LeaseRecord): Promise<void> {
    validateRecordArgs(record, undefined)
    await this.#send({ op: 'release', record: toWire(record) })
  }

  async readCheckpoint(record: LeaseRecord): Promise<CheckpointRead> {
    validateRecordArgs(record, undefined)
    const reply = (await this.#send({ op: 'readCheckpoint', record: toWire(record) })) as {
      state: string | null
      cleanHandoff: boolean
    }
    return {
      state: reply.state === null ? null : new Uint8Array(Buffer.from(reply.state, 'base64')),
      cleanHandoff: reply.cleanHandoff,
    }
  }

  async list(options?: ListOptions): Promise<LeasePage> {
    const { prefix, cursor, limit } = options ?? {}
    const reply = (await this.#send({
      op: 'list',
      list: {
        ...(prefix !== undefined ? { prefix } : {}),
        ...(cursor !== undefined ? { cursor } : {}),
        ...(limit !== undefined ? { limit } : {}),
      },
    })) as { leases: WireListing[]; now: number; cursor?: string }
    return {
      leases: reply.leases.map((l) => ({
        workId: l.workId,
        holderId: l.holderId,
        fencingToken: BigInt(l.token),
        expiresAt: new Date(l.expiresAt),
        released: l.released,
        free: l.free,
        checkpointBytes: l.checkpointBytes,
      })),
      now: new Date(reply.now),
      ...(reply.cursor !== undefined ? { cursor: reply.cursor } : {}),
    }
  }

  close(): void {
    this.#socket?.destroy()
  }
}
