// The genuine servers servers.sh starts, as the suites find them: through the variables that
// `eval "$(bash scripts/servers.sh env)"` exports. Nothing here starts them (that needs root, a chroot
// and minutes); a suite without a server's variable skips it and prints why.

/** Each genuine server and the variable that names where it listens. */
export const GENUINE_SERVERS = {
  mysql97: 'MYSQL97_URL',
  postgres18: 'POSTGRES18_URL',
  ferretdb2: 'FERRETDB2_URL',
  dynamodbLocal: 'DYNAMODB_LOCAL_ENDPOINT',
}

/**
 * The URL of every genuine server whose variable is set in `env` (default `process.env`).
 *
 * ```js
 * const { ferretdb2 } = genuineServers() // 'mongodb://127.0.0.1:27018/' when servers.sh runs it
 * ```
 */
export function genuineServers(env = process.env) {
  const found = {}
  for (const [name, variable] of Object.entries(GENUINE_SERVERS)) {
    if (env[variable]) found[name] = env[variable]
  }
  return found
}

/**
 * The reason a suite prints when it skips a server because `variable` is not set.
 *
 * ```js
 * if (!process.env.MYSQL97_URL) console.warn(`skipping mysql97: ${notSetReason('MYSQL97_URL')}`)
 * ```
 */
export function notSetReason(variable) {
  return `${variable} is not set (scripts/servers.sh start, then eval "$(scripts/servers.sh env)")`
}

/**
 * The MongoDB-speaking server the suites and the bench use: a genuine MongoDB at `MONGODB_URL` first,
 * else FerretDB 2.7 at `FERRETDB2_URL` (atomic findAndModify); undefined when neither is set, and the
 * caller falls back to a FerretDB 1.24 of its own.
 *
 * ```js
 * const found = mongoServer() // { variable: 'FERRETDB2_URL', url: 'mongodb://127.0.0.1:27018/' }
 * ```
 */
export function mongoServer(env = process.env) {
  for (const variable of ['MONGODB_URL', GENUINE_SERVERS.ferretdb2]) {
    if (env[variable]) return { variable, url: env[variable] }
  }
  return undefined
}
