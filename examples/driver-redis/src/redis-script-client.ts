/**
 * The slice of an ioredis client (`Redis` or `Cluster`) that {@link RedisBackend} uses: Lua scripts
 * defined as commands, and the options that say whether the client resends commands on its own. A
 * structural type, so the driver does not pin ioredis's own types and any ioredis 6 client fits.
 *
 * ```ts
 * import { Redis } from 'ioredis'
 * const client: RedisScriptClient = new Redis('redis://127.0.0.1:6379', {
 *   maxRetriesPerRequest: 0,
 *   autoResendUnfulfilledCommands: false,
 * })
 * ```
 */
export interface RedisScriptClient {
  /**
   * Registers `lua` as the commands `name` (string replies) and `nameBuffer` (Buffer replies). Each
   * call sends one command: EVAL with the script's body the first time on a connection, EVALSHA after.
   */
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number; readOnly?: boolean }): void
  /**
   * ioredis's options; the backend refuses a client that would resend a command whose reply was lost,
   * and one with its own `keyPrefix` (give the prefix to the backend's `keyPrefix` option instead).
   */
  readonly options?: {
    readonly autoResendUnfulfilledCommands?: boolean
    readonly retryDelayOnFailover?: number
    readonly keyPrefix?: string | Buffer
    readonly redisOptions?: {
      readonly autoResendUnfulfilledCommands?: boolean
      readonly keyPrefix?: string | Buffer
    }
  }
  /** True on an ioredis `Cluster`. */
  readonly isCluster?: boolean
}
