import { createHash } from 'node:crypto'
import {
  type AcquireArgs,
  type AcquiredWithCheckpoint,
  type Backend,
  type BackendCapabilities,
  type CallOptions,
  type CheckpointOptions,
  type CheckpointRead,
  compareWorkIds,
  createLeaseRecord,
  FencedError,
  InvalidArgumentError,
  LeaseExpiredError,
  type LeaseListing,
  type LeasePage,
  type LeaseRecord,
  type ListOptions,
  leaseHeldBy,
  type RenewOutcome,
  type RevokeOptions,
  raceAbort,
  readOnce,
  TokensExhaustedError,
  type ValidatedCallOptions,
  validateAcquireArgs,
  validateCheckpointArgs,
  validateListArgs,
  validateRecordArgs,
  validateRenewArgs,
  validateRenewManyArgs,
  validateRevokeArgs,
} from '@worklease/spec'
import {
  ACQUIRE,
  CHECKPOINT,
  LIST,
  READ_CHECKPOINT,
  RELEASE,
  RENEW,
  RENEW_MANY,
  REVOKE,
} from './lua-scripts.js'
import type { RedisScriptClient } from './redis-script-client.js'

/** Options of {@link RedisBackend}. */
export interface RedisBackendOptions {
  /**
   * Your ioredis client, configured never to send a command a second time after its reply was lost:
   * the constructor throws an `InvalidArgumentError` otherwise. By default ioredis resends every command that
   * was in flight when the connection dropped (`autoResendUnfulfilledCommands`), and a `Cluster`
   * resends one whose node connection closed (`retryDelayOnFailover`). A release that already
   * succeeded then comes back `FENCED`, and the caller reports lost work that had in fact finished.
   * Backend calls are single attempts: retrying, and making sense of an unknown outcome, is the
   * caller's decision. `maxRetriesPerRequest: 0` makes a call whose connection dropped reject at
   * once (with `autoResendUnfulfilledCommands: false` alone it would wait for the caller's signal).
   * Commands queued while disconnected (`enableOfflineQueue`) never reached Redis, so sending them
   * later is harmless, and so is `reconnectOnError`'s resend: every script reads and checks before its
   * first write, and no write after the first can fail, so an error reply means nothing was written.
   *
   * ```ts
   * const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
   *   maxRetriesPerRequest: 0,
   *   autoResendUnfulfilledCommands: false,
   * })
   * const backend = new RedisBackend({ client })
   * // A Cluster: new Cluster(nodes, { retryDelayOnFailover: 0,
   * //   redisOptions: { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false } })
   * // Sharing a client configured otherwise (BullMQ needs maxRetriesPerRequest: null): duplicate it.
   * // new RedisBackend({ client: shared.duplicate({ maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false }) })
   * ```
   */
  client: RedisScriptClient
  /**
   * Begins every key of this backend: a lease's is `<keyPrefix>` and U+0000 (which no workId and no
   * prefix holds) before its workId, the list index's `<keyPrefix>` alone. Default: `'worklease:'`.
   * Give each application (or each test) its own prefix to keep their leases apart in one database:
   * two prefixes never name one key, even where one begins with the other (`'billing:'` and
   * `'billing:leases:'`). Use this option, not the
   * client's own `keyPrefix`: the constructor refuses a client with one (`InvalidArgumentError`),
   * because ioredis prefixes a script's keys but not its arguments, and `list` could not find the
   * leases.
   *
   * ```ts
   * const backend = new RedisBackend({ client, keyPrefix: 'billing:leases:' })
   * ```
   */
  keyPrefix?: string
  /**
   * Largest checkpoint state in bytes. Default: 16 MiB. Redis accepts up to `proto-max-bulk-len`
   * (512 MiB by default), but large values block the single-threaded server while they are copied.
   *
   * ```ts
   * const backend = new RedisBackend({ client, maxStateBytes: 1024 * 1024 })
   * ```
   */
  maxStateBytes?: number
  /**
   * Whether to keep the list index `list` reads: a sorted set at the key `<keyPrefix>` itself, to
   * which every acquire adds its workId (in the same script). Default: `true` on a single Redis,
   * `false` on a `Cluster`, where a script may only touch keys of one slot: there `true` needs a key
   * prefix with a hash tag (`'{billing}:'`), which puts every lease of the prefix on one node.
   * Without it, `capabilities.list` is `false` and `list` throws.
   *
   * ```ts
   * const backend = new RedisBackend({ client: cluster, keyPrefix: '{billing}:', listIndex: true })
   * ```
   */
  listIndex?: boolean
}

type ScriptCall = (...args: Array<string | Buffer>) => Promise<unknown>

const DEFAULT_MAX_STATE_BYTES = 16 * 1024 * 1024
/** Leases per renewMany script call: it blocks the server while it runs, so keep it to a few ms. */
const RENEW_MANY_MAX_RECORDS = 1_000

/**
 * The name under which the driver defines a script on the client: `worklease`, the label, and the
 * first 12 hex digits of the SHA-1 of the key count and the Lua source. ioredis keeps one script per
 * name on a client (and with `enableAutoPipelining` runs whichever was defined last under it), so an
 * older or newer copy of the driver sharing the client must never give another script this name. A
 * name derived from the definition cannot be kept by mistake when the script changes.
 */
export function commandName(label: string, lua: string, numberOfKeys: number | undefined): string {
  const hash = createHash('sha1')
    .update(`${numberOfKeys ?? 'dynamic'}\n${lua}`)
    .digest('hex')
  return `worklease${label}${hash.slice(0, 12)}`
}

function command(label: string, lua: string, numberOfKeys: number | undefined) {
  return [commandName(label, lua, numberOfKeys), lua, numberOfKeys] as const
}

// Computed once, at module load. Acquire is defined twice, with one key (no index) and with two (the
// lease and the index).
const COMMANDS = {
  acquire: command('Acquire', ACQUIRE, 1),
  acquireIndexed: command('AcquireIndexed', ACQUIRE, 2),
  // The same scripts, answering in Buffers: the state comes back as bytes.
  acquireRead: command('Acquire', ACQUIRE, 1),
  acquireReadIndexed: command('AcquireIndexed', ACQUIRE, 2),
  checkpoint: command('Checkpoint', CHECKPOINT, 1),
  renew: command('Renew', RENEW, 1),
  // No fixed key count: the first argument says how many leases the batch holds.
  renewMany: command('RenewMany', RENEW_MANY, undefined),
  release: command('Release', RELEASE, 1),
  readCheckpoint: command('ReadCheckpoint', READ_CHECKPOINT, 1),
  list: command('List', LIST, 1),
  revoke: command('Revoke', REVOKE, 1),
}

type Operation = keyof typeof COMMANDS

/**
 * What each script answers: its statuses, each with the least and most values after it (Lua drops a
 * nil at the end of a reply, so a lease with no state answers one value fewer). Any other reply is a
 * store failure: read as a lease outcome, a `{'HELD'}` from a proxy or a changed script would pass
 * for a renewed lease, or a `revoke` that did nothing.
 */
const ACQUIRE_REPLIES = { OK: [2, 2], HELD: [4, 4], EXHAUSTED: [0, 0], EVICTS: [1, 1] } as const
const ACQUIRE_READ_REPLIES = { OK: [3, 4], HELD: [4, 4], EXHAUSTED: [0, 0], EVICTS: [1, 1] } as const
const REPLIES: Readonly<
  Record<Exclude<Operation, 'list'>, Readonly<Record<string, readonly [number, number]>>>
> = {
  acquire: ACQUIRE_REPLIES,
  acquireIndexed: ACQUIRE_REPLIES,
  acquireRead: ACQUIRE_READ_REPLIES,
  acquireReadIndexed: ACQUIRE_READ_REPLIES,
  checkpoint: { OK: [0, 0], FENCED: [0, 0] },
  renew: { OK: [0, 0], FENCED: [0, 0], EXPIRED: [0, 0] },
  // One outcome per lease of the batch, counted by renewMany itself.
  renewMany: { OK: [0, Number.POSITIVE_INFINITY] },
  release: { OK: [0, 0], FENCED: [0, 0] },
  readCheckpoint: { OK: [1, 2], FENCED: [0, 0] },
  revoke: { OK: [0, 0], FENCED: [0, 0], FREE: [0, 0] },
}

// Replies as Buffers only where bytes come back (the checkpoint's state; list's workIds, compared as
// bytes): elsewhere ioredis's string replies save a Buffer and a decode per element.
const BUFFER_REPLIES: ReadonlySet<Operation> = new Set([
  'readCheckpoint',
  'list',
  'acquireRead',
  'acquireReadIndexed',
])

/**
 * A worklease backend on Redis: every operation is one Lua script call, atomic on the server and
 * timed by Redis's own clock (`capabilities.clock` is `'server'`).
 *
 * ```ts
 * import { Redis } from 'ioredis'
 * import { RedisBackend } from 'worklease-driver-redis-example'
 *
 * const client = new Redis({ maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false })
 * const backend = new RedisBackend({ client })
 * const record = await backend.acquire('job-7', 'worker-a', 30_000)
 * ```
 */
export class RedisBackend implements Backend {
  readonly capabilities: BackendCapabilities
  /** The list index's key. */
  readonly #keyPrefix: string
  /**
   * What a lease's key begins with: the prefix and U+0000. Joined bare, the prefixes `'a:'` and
   * `'a:b:'` named one key for the workIds `'b:job'` and `'job'` (two applications sharing one lease
   * and its tokens), and the workId `'b:'` of the first was the second's list index.
   */
  readonly #leaseKeyPrefix: string
  readonly #listIndex: boolean
  /** Whether an acquire has found that the server does not evict keys: checked once, in that script. */
  #evictionChecked = false
  readonly #scripts: Record<Operation, ScriptCall>

  constructor(options: RedisBackendOptions) {
    const {
      client,
      keyPrefix = 'worklease:',
      listIndex,
      maxStateBytes = DEFAULT_MAX_STATE_BYTES,
    } = readOptions(options)
    if (typeof client !== 'object' || client === null || typeof client.defineCommand !== 'function') {
      throw new InvalidArgumentError('worklease redis: client must be an ioredis client')
    }
    // A string once: an object with Symbol.toPrimitive would be made a key again on every call.
    if (typeof keyPrefix !== 'string')
      throw new InvalidArgumentError('worklease redis: keyPrefix must be a string')
    // Sent as UTF-8, which has no lone surrogate: two prefixes differing only in one would name the
    // same keys (both halves become U+FFFD), and two backends meant apart would share their leases.
    if (/\p{Surrogate}/u.test(keyPrefix)) {
      throw new InvalidArgumentError('worklease redis: keyPrefix must not contain lone surrogates')
    }
    // The separator of prefix and workId: with one in it, 'a\0' and 'a' would share keys again.
    if (keyPrefix.includes('\u0000')) {
      throw new InvalidArgumentError('worklease redis: keyPrefix must not contain U+0000')
    }
    if (listIndex !== undefined && typeof listIndex !== 'boolean') {
      throw new InvalidArgumentError('worklease redis: listIndex must be a boolean')
    }
    if (typeof maxStateBytes !== 'number' || !Number.isSafeInteger(maxStateBytes) || maxStateBytes < 0) {
      throw new InvalidArgumentError('worklease redis: maxStateBytes must be a non-negative integer')
    }
    refuseResendingClient(client)
    refusePrefixingClient(client)
    this.#keyPrefix = keyPrefix
    this.#leaseKeyPrefix = `${keyPrefix}\u0000`
    this.#listIndex = listIndex ?? !client.isCluster
    if (this.#listIndex && client.isCluster && !hasHashTag(this.#keyPrefix)) {
      throw new InvalidArgumentError(
        'worklease redis: on a Cluster the list index needs every lease key in its slot: give a key ' +
          "prefix with a hash tag (keyPrefix: '{worklease}:'), or listIndex: false",
      )
    }
    this.capabilities = Object.freeze({
      clock: 'server',
      maxStateBytes,
      crossConnectionAtomic: true,
      reportsHolder: true,
      acquireWithCheckpoint: true,
      list: this.#listIndex,
      revoke: true,
      // One script touches every key of the batch: on a Cluster they must share a slot (a hash tag).
      ...(client.isCluster && !hasHashTag(this.#keyPrefix)
        ? {}
        : { renewMany: Object.freeze({ maxRecords: RENEW_MANY_MAX_RECORDS }) }),
    })
    // defineCommand is local (no round trip); the script body travels with the first call.
    const scripts = {} as Record<Operation, ScriptCall>
    for (const [operation, [name, lua, numberOfKeys]] of Object.entries(COMMANDS) as Array<
      [Operation, (typeof COMMANDS)[Operation]]
    >) {
      client.defineCommand(name, numberOfKeys === undefined ? { lua } : { lua, numberOfKeys })
      const method = BUFFER_REPLIES.has(operation) ? `${name}Buffer` : name
      const call = (client as unknown as Record<string, ScriptCall>)[method]
      if (typeof call !== 'function') throw new TypeError(`client.defineCommand did not define ${method}`)
      scripts[operation] = call.bind(client)
    }
    this.#scripts = scripts
  }

  // Every method uses only what spec's validators return: a frozen snapshot read once, so a record
  // whose getters answer differently on a second read cannot name another holder's lease to Redis.

  async acquire(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<LeaseRecord> {
    const args = validateAcquireArgs(workId, holderId, ttlMs, options)
    const reply = this.#listIndex
      ? await this.#call(
          'acquireIndexed',
          args,
          [this.#key(args.workId), this.#keyPrefix],
          args.workId,
          args.holderId,
          String(args.ttlMs),
          '0',
          this.#evictionChecked ? '0' : '1',
        )
      : await this.#call(
          'acquire',
          args,
          [this.#key(args.workId)],
          args.workId,
          args.holderId,
          String(args.ttlMs),
          '0',
          this.#evictionChecked ? '0' : '1',
        )
    return this.#taken(args, reply)
  }

  /** {@link acquire}, and the taken lease's state and handoff from the same script call. */
  async acquireWithCheckpoint(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<AcquiredWithCheckpoint> {
    const args = validateAcquireArgs(workId, holderId, ttlMs, options)
    const reply = this.#listIndex
      ? await this.#call(
          'acquireReadIndexed',
          args,
          [this.#key(args.workId), this.#keyPrefix],
          args.workId,
          args.holderId,
          String(args.ttlMs),
          '1',
          this.#evictionChecked ? '0' : '1',
        )
      : await this.#call(
          'acquireRead',
          args,
          [this.#key(args.workId)],
          args.workId,
          args.holderId,
          String(args.ttlMs),
          '1',
          this.#evictionChecked ? '0' : '1',
        )
    const record = this.#taken(args, reply)
    const [, , clean, state] = reply.values
    return { record, checkpoint: { cleanHandoff: text(clean) === '1', state: bytesOf(state) } }
  }

  /** The record of an acquire's reply, or its refusal (LEASE_HELD with the holder, TOKENS_EXHAUSTED). */
  #taken(args: AcquireArgs, reply: Reply): LeaseRecord {
    if (reply.status === 'EVICTS') {
      throw new Error(
        `worklease redis: the server's maxmemory-policy ${text(reply.values[0])} evicts any key once memory is full (whatever maxmemory is now): a lease hash it evicts starts its workId's tokens again at 1, and a fence would let a stale holder in. Use maxmemory-policy noeviction (or a volatile-* policy: no lease key has a TTL).`,
      )
    }
    this.#evictionChecked = true
    if (reply.status === 'HELD') {
      const [holder, token, expires, expiresIn] = reply.values.map(text)
      // A revoked lease (holder '') whose expiry is still ahead of TIME names nobody: no `holder`.
      throw leaseHeldBy({
        holderId: holder!,
        fencingToken: storedToken(token!),
        expiresAtMs: storedMs(expires!),
        expiresInMs: Number(expiresIn),
      })
    }
    if (reply.status === 'EXHAUSTED') throw new TokensExhaustedError()
    const [token, expires] = reply.values
    return createLeaseRecord(args.workId, args.holderId, storedToken(text(token)), storedMs(text(expires)))
  }

  async checkpoint(
    record: LeaseRecord,
    state: Uint8Array,
    ttlMs: number,
    options?: CheckpointOptions,
  ): Promise<void> {
    const args = validateCheckpointArgs(record, state, ttlMs, this.capabilities.maxStateBytes, options)
    // args.state is already a private copy; a Buffer view over it is sent byte for byte.
    const bytes = Buffer.from(args.state.buffer, args.state.byteOffset, args.state.byteLength)
    this.#settled(
      await this.#call(
        'checkpoint',
        args,
        ...this.#fence(args.record),
        String(args.ttlMs),
        bytes,
        String(args.sequence),
      ),
    )
  }

  async renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void> {
    const args = validateRenewArgs(record, ttlMs, options)
    this.#settled(await this.#call('renew', args, ...this.#fence(args.record), String(args.ttlMs)))
  }

  /** One script call for the whole batch, atomic on the server: one round trip whatever the outcomes. */
  async renewMany(
    records: readonly LeaseRecord[],
    ttlMs: number,
    options?: CallOptions,
  ): Promise<RenewOutcome[]> {
    const args = validateRenewManyArgs(records, ttlMs, RENEW_MANY_MAX_RECORDS, options)
    if (args.holderId === undefined) return []
    if (!this.capabilities.renewMany)
      throw new TypeError('worklease redis: renewMany needs one slot (a hash tag)')
    const keys = args.records.map((record) => this.#key(record.workId))
    const tokens = args.records.map((record) => record.fencingToken.toString())
    const reply = await this.#call(
      'renewMany',
      args,
      [String(keys.length), ...keys],
      args.holderId,
      String(args.ttlMs),
      ...tokens,
    )
    if (reply.values.length !== keys.length) {
      throw new Error(
        `worklease redis: renewMany answered ${reply.values.length} outcomes for ${keys.length}`,
      )
    }
    return reply.values.map((value): RenewOutcome => {
      const code = text(value)
      if (code === 'R') return 'renewed'
      if (code === 'E') return 'expired'
      if (code === 'F') return 'fenced'
      throw new Error(`worklease redis: unexpected renewMany outcome ${code}`)
    })
  }

  async release(record: LeaseRecord, options?: CallOptions): Promise<void> {
    const args = validateRecordArgs(record, options)
    this.#settled(await this.#call('release', args, ...this.#fence(args.record)))
  }

  async readCheckpoint(record: LeaseRecord, options?: CallOptions): Promise<CheckpointRead> {
    const args = validateRecordArgs(record, options)
    const reply = this.#settled(await this.#call('readCheckpoint', args, ...this.#fence(args.record)))
    const [clean, state] = reply.values
    return { cleanHandoff: text(clean) === '1', state: bytesOf(state) }
  }

  /**
   * One script call a page: ZRANGEBYLEX over the index from the prefix (or just after the cursor) to
   * the prefix followed by byte 0xFF (no UTF-8 string has that byte, so every id with the prefix sorts
   * before it and every other id after it), then each lease's fields and its state's size (HSTRLEN,
   * never the bytes), with Redis's TIME as the page's now. Bounds are bytes: nothing is a pattern.
   */
  async list(options?: ListOptions): Promise<LeasePage> {
    const args = validateListArgs(options)
    if (!this.#listIndex) {
      throw new TypeError('worklease redis: list needs the list index (RedisBackend option listIndex)')
    }
    const { prefix, cursor, limit } = args
    const min =
      cursor !== undefined && compareWorkIds(cursor, prefix) >= 0
        ? Buffer.from(`(${cursor}`)
        : prefix === ''
          ? '-'
          : Buffer.from(`[${prefix}`)
    const max = prefix === '' ? '+' : Buffer.concat([Buffer.from(`(${prefix}`), Buffer.of(0xff)])
    const raw = await raceAbort(
      this.#scripts.list(this.#keyPrefix, this.#leaseKeyPrefix, min, max, String(limit)),
      args.signal,
    )
    if (!Array.isArray(raw) || raw.length < 2 || (raw.length - 2) % 6 !== 0) {
      throw new Error(`worklease redis: unexpected reply to list: ${String(raw)}`)
    }
    const now = Number(text(raw[0]))
    const next = text(raw[1])
    const leases: LeaseListing[] = []
    for (let i = 2; i < raw.length; i += 6) {
      const [workId, token, holder, expires, released, size] = raw.slice(i, i + 6)
      const expiresAtMs = storedMs(text(expires))
      const isReleased = text(released) === '1'
      leases.push(
        Object.freeze({
          workId: text(workId),
          holderId: text(holder),
          fencingToken: storedToken(text(token)),
          expiresAt: new Date(expiresAtMs),
          released: isReleased,
          free: isReleased || expiresAtMs <= now,
          checkpointBytes: Number(size) < 0 ? null : Number(size),
        }),
      )
    }
    return { leases, now: new Date(now), ...(next === '' ? {} : { cursor: next }) }
  }

  /**
   * One script call: a live lease gets holder '' and expires now, on Redis's clock. With
   * `options.fencingToken`, only if its token is that one (an exact decimal string, compared by the
   * script).
   */
  async revoke(workId: string, options?: RevokeOptions): Promise<boolean> {
    const args = validateRevokeArgs(workId, options)
    const expected = args.fencingToken === undefined ? '' : args.fencingToken.toString()
    const reply = await this.#call('revoke', args, [this.#key(args.workId)], expected)
    return reply.status === 'OK'
  }

  #key(workId: string): string {
    return `${this.#leaseKeyPrefix}${workId}`
  }

  /** The script keys and arguments that identify the holder: the token as an exact decimal string. */
  #fence(record: LeaseRecord): [string[], string, string] {
    return [[this.#key(record.workId)], record.fencingToken.toString(), record.holderId]
  }

  #settled(reply: Reply): Reply {
    if (reply.status === 'FENCED') throw new FencedError()
    if (reply.status === 'EXPIRED') throw new LeaseExpiredError()
    return reply
  }

  async #call(
    operation: Exclude<Operation, 'list'>,
    options: ValidatedCallOptions,
    keys: string[],
    ...args: Array<string | Buffer>
  ): Promise<Reply> {
    const pending = this.#scripts[operation](...keys, ...args)
    // ioredis cannot cancel a queued command: an abort stops the wait, and the script may still run.
    const raw = await raceAbort(pending, options.signal)
    const unexpected = () => new Error(`worklease redis: unexpected reply to ${operation}: ${String(raw)}`)
    if (!Array.isArray(raw) || raw.length === 0) throw unexpected()
    const status = text(raw[0])
    const counts = Object.hasOwn(REPLIES[operation], status) ? REPLIES[operation][status] : undefined
    if (counts === undefined || raw.length - 1 < counts[0] || raw.length - 1 > counts[1]) throw unexpected()
    return { status, values: raw.slice(1) }
  }
}

interface Reply {
  readonly status: string
  readonly values: unknown[]
}

/**
 * Throws unless `client` is configured never to resend a command whose reply was lost (see
 * {@link RedisBackendOptions.client}). A client that is not ioredis (no `options`) is taken on trust.
 */
/** The options, each read once: a getter cannot answer a check and the backend apart. */
function readOptions(options: RedisBackendOptions): RedisBackendOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('worklease redis: options must be an object')
  }
  return readOnce(
    options,
    ['client', 'keyPrefix', 'listIndex', 'maxStateBytes'],
    'options',
  ) as RedisBackendOptions
}

function refuseResendingClient(client: RedisScriptClient): void {
  const { options } = client
  if (options === undefined) return
  const fix = client.isCluster
    ? 'new Cluster(nodes, { retryDelayOnFailover: 0, redisOptions: { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false } })'
    : 'new Redis(url, { maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false })'
  const resends = client.isCluster
    ? options.retryDelayOnFailover !== 0 || options.redisOptions?.autoResendUnfulfilledCommands !== false
    : options.autoResendUnfulfilledCommands !== false
  if (resends) {
    throw new InvalidArgumentError(
      'worklease redis: the client resends a command whose reply was lost after a reconnect ' +
        "(autoResendUnfulfilledCommands, or a Cluster's retryDelayOnFailover), so a release that " +
        `succeeded could come back FENCED. Use ${fix}.`,
    )
  }
}

/**
 * Throws unless the client leaves keys as they are. ioredis prepends its own `keyPrefix` to a script's
 * KEYS but not to its ARGV, and the list script builds each lease's key from its arguments (the keys
 * are not known before the index is read): with a client prefix, `list` would find no lease at all.
 */
function refusePrefixingClient(client: RedisScriptClient): void {
  const { options } = client
  // A Cluster copies redisOptions.keyPrefix to its own options; both are read for a structural client.
  const clientPrefix = options?.keyPrefix || options?.redisOptions?.keyPrefix
  if (clientPrefix === undefined || clientPrefix.length === 0) return
  throw new InvalidArgumentError(
    `worklease redis: the client has its own keyPrefix (${JSON.stringify(String(clientPrefix))}), ` +
      "which ioredis adds to a script's keys but not to its arguments, so list would find no lease. " +
      "Give the prefix to RedisBackend's own keyPrefix option instead: new RedisBackend({ client, " +
      "keyPrefix: 'app:worklease:' }), with a client that has none (client.duplicate({ keyPrefix: '' })).",
  )
}

/** Whether every key with this prefix has the same hash tag, so Redis Cluster puts them in one slot. */
function hasHashTag(keyPrefix: string): boolean {
  const open = keyPrefix.indexOf('{')
  return open >= 0 && keyPrefix.indexOf('}', open + 1) > open + 1
}

// Copied out of the reply buffer (which may be pooled) into a plain Uint8Array of our own.
function bytesOf(state: unknown): Uint8Array | null {
  return state === null || state === undefined ? null : new Uint8Array(state as Buffer)
}

function text(value: unknown): string {
  if (typeof value === 'string') return value
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  if (typeof value === 'number') return String(value)
  throw new Error(`worklease redis: unexpected reply element ${String(value)}`)
}

/**
 * A token as the hash holds it: a canonical decimal, else the hash is malformed (a store failure).
 * `BigInt` alone takes '0x10' and ' 7', which no fence compares equal to what is stored.
 */
function storedToken(value: string): bigint {
  if (!/^[1-9]\d*$/.test(value)) {
    throw new Error(
      `worklease redis: malformed lease hash: token ${JSON.stringify(value)} is not a decimal integer`,
    )
  }
  return BigInt(value)
}

/** Epoch milliseconds as the hash holds them (the scripts' stored_int): `Number` alone takes 'NaN'. */
function storedMs(value: string): number {
  if (!/^-?\d{1,16}$/.test(value)) {
    throw new Error(
      `worklease redis: malformed lease hash: expires ${JSON.stringify(value)} is not an integer`,
    )
  }
  return Number(value)
}
