/**
 * What `worklease` exits with. Scripts may rely on these; they never change meaning.
 *
 * ```sh
 * worklease show invoice-42 --store sqlite:./leases.db --json
 * if [ $? -eq 3 ]; then echo "no such lease"; fi
 * ```
 */
export const ExitCode = Object.freeze({
  /** Done. */
  OK: 0,
  /** The store failed (unreachable, missing table, permissions): nothing was decided. */
  STORE_FAILED: 1,
  /** The command line was wrong: unknown command or option, bad store URL, bad value. */
  USAGE: 2,
  /** `show`: no lease for that workId; `revoke`: the lease was not live, nothing was revoked. */
  NOT_FOUND: 3,
  /** The store's driver cannot do this (no `list` or `revoke` capability). */
  UNSUPPORTED: 4,
  /** `revoke` was not confirmed. */
  DECLINED: 5,
} as const)

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode]
