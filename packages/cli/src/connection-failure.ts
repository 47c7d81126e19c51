/**
 * Error codes of a connection refused, reset or dropped, and of a server shutting down or starting
 * up: the store went away for a while (a restart, a failover), which a later read may find over.
 */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  // mysql2: the server closed the connection; MySQL/MariaDB: shutting down.
  'PROTOCOL_CONNECTION_LOST',
  'ER_SERVER_SHUTDOWN',
  // PostgreSQL: admin_shutdown, crash_shutdown, cannot_connect_now (starting up, shutting down).
  '57P01',
  '57P02',
  '57P03',
])

/** The MongoDB client's classes for a server it cannot reach (it retries within them itself). */
const CONNECTION_ERROR_NAMES = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoServerSelectionError',
  'MongoPoolClearedError',
])

/** pg's and mysql2's words for a connection that ended under a query, which they give no code. */
const CONNECTION_MESSAGES = /^Connection terminated|connection is in closed state/

/**
 * Whether `error` says the connection to the store failed, rather than the store refusing the read
 * (a missing table, a permission, bad credentials: those stay failures however often it is read).
 * Looks through `cause` and an AggregateError's `errors` (Node's connect to every address of a host).
 */
export function isConnectionFailure(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 3) return false
  const { code, name, message, cause, errors } = error as {
    code?: unknown
    name?: unknown
    message?: unknown
    cause?: unknown
    errors?: unknown
  }
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true
  if (typeof name === 'string' && CONNECTION_ERROR_NAMES.has(name)) return true
  if (typeof message === 'string' && CONNECTION_MESSAGES.test(message)) return true
  if (isConnectionFailure(cause, depth + 1)) return true
  return Array.isArray(errors) && errors.some((inner) => isConnectionFailure(inner, depth + 1))
}
