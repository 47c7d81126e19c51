/**
 * The AWS SDK warns, once a process and over nine lines, that its versions published after January
 * 2027 need Node.js 22: on Node.js 20 every DynamoDB command printed it above the one line it says it
 * prints for a store failure. It is about SDK versions to come, not this run, so the command turns it
 * off with the SDK's own switch, unless the environment set that switch already. Node's printer of
 * process warnings is left alone (`--no-warnings`, `--trace-warnings` and the rest still apply).
 *
 * ```ts
 * quietSdkNodeVersionWarning(process.env)
 * ```
 */
export function quietSdkNodeVersionWarning(env: NodeJS.ProcessEnv): void {
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'
}

/** The first words of pg's warning, which names the mode of the URL only further on. */
const PG_SSLMODE_NOTE =
  "SECURITY WARNING: The SSL modes 'prefer', 'require', and 'verify-ca' are treated as aliases for 'verify-full'."

/**
 * pg 8 (its pg-connection-string 2) warns, once a process and over nine lines, that its next major
 * version will read `sslmode=prefer`, `require` and `verify-ca` as libpq does: `--store
 * "postgres://...?sslmode=require"` printed it above the one line a command prints for a failure.
 * Like the SDK's, it is about versions to come: this run verifies the certificate as `verify-full`
 * does (the README says so). pg has no switch for it, so this one warning, known by its first words,
 * is dropped where it is emitted; every other warning goes on to Node's printer, which is left alone
 * (`--no-warnings`, `--trace-warnings` still apply).
 *
 * ```ts
 * quietPgSslModeWarning(process)
 * ```
 */
export function quietPgSslModeWarning(target: { emitWarning: NodeJS.Process['emitWarning'] }): void {
  const emit = target.emitWarning
  target.emitWarning = function emitWarning(this: unknown, ...args: unknown[]): void {
    const warning = args[0]
    const text = warning instanceof Error ? warning.message : warning
    if (typeof text === 'string' && text.startsWith(PG_SSLMODE_NOTE)) return
    Reflect.apply(emit, this, args)
  } as NodeJS.Process['emitWarning']
}
