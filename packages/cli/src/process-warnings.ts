/**
 * Node prints a process warning over as many lines as its message has: the AWS SDK's
 * `NodeVersionSupportWarning` on Node.js 20 took nine, above the one line the command says it prints
 * for a store failure. This prints each warning on one line instead, and drops that one: it is about
 * SDK versions to come, not this run, and a command run from a script would show it every time.
 *
 * ```ts
 * printWarningsOnOneLine(process, process.stderr)
 * ```
 */
export function printWarningsOnOneLine(
  target: Pick<NodeJS.Process, 'on' | 'removeAllListeners'>,
  stderr: NodeJS.WritableStream,
): void {
  // Node's own printer is the 'warning' listener it added at start (none under --no-warnings).
  target.removeAllListeners('warning')
  target.on('warning', (warning: Error) => {
    // The SDK emits it as a plain 'Warning' whose message starts with its name.
    if (`${warning.name} ${warning.message}`.includes('NodeVersionSupportWarning')) return
    const message = `${warning.message}`.replace(/\s*\n\s*/g, ' ').trim()
    stderr.write(`worklease: warning: ${warning.name}: ${message}\n`)
  })
}
