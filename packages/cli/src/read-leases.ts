import { type Backend, type LeasePage, type ListOptions, validateId } from '@worklease/spec'
import { CliError } from './cli-error.js'
import { ExitCode } from './exit-code.js'

export function listOf(backend: Backend): (options?: ListOptions) => Promise<LeasePage> {
  if (!backend.capabilities.list || typeof backend.list !== 'function') {
    throw new CliError('this store\'s driver cannot list leases (no "list" capability)', ExitCode.UNSUPPORTED)
  }
  return backend.list.bind(backend)
}

/**
 * Every page under `prefix`, one at a time, so memory stays bounded by one page whatever the table
 * holds; stops after `max` leases. `signal` abandons the read in flight (watch's Ctrl-C).
 */
export async function* pages(
  backend: Backend,
  { prefix, pageSize, max, signal }: { prefix: string; pageSize: number; max: number; signal?: AbortSignal },
): AsyncGenerator<LeasePage> {
  const list = listOf(backend)
  let cursor: string | undefined
  let seen = 0
  do {
    const limit = Math.min(pageSize, max - seen)
    if (limit <= 0) return
    // Only a cursor that is used: one after the last lease wanted is never sent.
    if (cursor !== undefined) checkCursor(cursor)
    const page = await list({
      prefix,
      limit,
      ...(cursor === undefined ? {} : { cursor }),
      ...(signal ? { signal } : {}),
    })
    seen += page.leases.length
    yield page
    cursor = page.cursor
  } while (cursor !== undefined)
}

/**
 * The next page starts after the last workId listed, which the store gave: one no lease can have (a
 * row written by hand, over 255 UTF-16 code units) is the store's fault, not the command line's,
 * which is what the driver's INVALID_ARGUMENT for it would say.
 */
function checkCursor(cursor: string): void {
  try {
    validateId('workId', cursor)
  } catch (error) {
    throw new CliError(
      `the store failed: it lists a workId no lease can have (${(error as Error).message}); the listing stops there`,
      ExitCode.STORE_FAILED,
      { cause: error },
    )
  }
}
