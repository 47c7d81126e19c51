export { RedisBackend, type RedisBackendOptions } from './redis-backend.js'
export type { RedisScriptClient } from './redis-script-client.js'
