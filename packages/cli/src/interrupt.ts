/**
 * Runs `body` with a signal that fires on the first of `signals` the process receives meanwhile. By
 * default SIGINT (Ctrl-C) and SIGTERM end a Node process at once, with nothing printed: in the middle
 * of a store call that left the operator unable to tell what happened (a revoke sent and then
 * interrupted still landed, later, after an exit that said nothing). While `body` runs, the signal is
 * the command's to act on instead; once it settles, the default applies again.
 *
 * ```ts
 * await whileInterruptible(['SIGINT'], (interrupted) => sleep(1_000, undefined, { signal: interrupted }))
 * ```
 */
export async function whileInterruptible<T>(
  signals: readonly NodeJS.Signals[],
  body: (interrupted: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController()
  const onSignal = (name: NodeJS.Signals) => controller.abort(new Interrupted(name))
  for (const name of signals) process.on(name, onSignal)
  try {
    return await body(controller.signal)
  } finally {
    for (const name of signals) process.off(name, onSignal)
  }
}

/** What an interrupted signal aborts with: which process signal it was. */
export class Interrupted extends Error {
  readonly signalName: NodeJS.Signals

  constructor(signalName: NodeJS.Signals) {
    super(`interrupted (${signalName})`)
    this.name = 'Interrupted'
    this.signalName = signalName
  }
}
