/**
 * The slice of an ioredis client (`Redis` or `Cluster`) that {@link RedisBackend} uses: Lua scripts
 * defined as commands. A structural type, so the driver does not pin ioredis's own types and any
 * ioredis 6 client fits.
 *
 * ```ts
 * import { Redis } from 'ioredis'
 * const client: RedisScriptClient = new Redis('redis://127.0.0.1:6379')
 * ```
 */
export interface RedisScriptClient {
  /**
   * Registers `lua` as the commands `name` (string replies) and `nameBuffer` (Buffer replies). Each
   * call sends one command: EVAL with the script's body the first time on a connection, EVALSHA after.
   */
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number; readOnly?: boolean }): void
}
