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
