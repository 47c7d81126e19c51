// The SDK names its retry middleware `retryMiddleware` in the `finalizeRequest` step with `high`
// priority, and lets a command's own stack override a client middleware of the same name, step and
// priority. Overriding it per command keeps the user's client (and its retries for other calls) as it is.
const RETRY_MIDDLEWARE = {
  name: 'retryMiddleware',
  step: 'finalizeRequest',
  priority: 'high',
  tags: ['RETRY'],
  override: true,
} as const

// smithy's middleware types are not a dependency of this package, hence `any`.
interface WithMiddlewareStack {
  middlewareStack: {
    add(middleware: any, options: any): void
  }
}

/**
 * Makes `command` a single HTTP attempt, whatever the client's `maxAttempts` says.
 *
 * Why: a conditional write whose first attempt was applied but whose reply was lost comes back from
 * the SDK's automatic retry as `ConditionalCheckFailedException`, which would turn a successful
 * acquire into `LEASE_HELD` and a successful release into `FENCED`. With one attempt the lost reply
 * surfaces as the network error it is (outcome unknown), and retrying is left to `@worklease/core`,
 * which knows how to retry each operation safely.
 */
export function singleAttempt<C extends WithMiddlewareStack>(command: C): C {
  command.middlewareStack.add(
    (next: (args: any) => Promise<any>) => (args: any) => next(args),
    RETRY_MIDDLEWARE,
  )
  return command
}

/**
 * The options every request of this package goes with: never `undefined`. A client made with
 * `cacheMiddleware: true` resolves the middleware stack once per command class for sends without
 * options and reuses it: a command's own stack (the {@link singleAttempt} override) would then be
 * ignored when the app sent that command class first (its retries would resend our conditional
 * writes), and cached for the app's own commands when we sent first (the app's would lose theirs).
 */
export function sendOptions(abortSignal: AbortSignal | undefined): { abortSignal?: AbortSignal } {
  return abortSignal ? { abortSignal } : {}
}
