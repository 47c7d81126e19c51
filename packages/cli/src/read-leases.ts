import type { Backend, LeasePage, ListOptions } from '@worklease/spec'
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
 * holds; stops after `max` leases.
 */
export async function* pages(
  backend: Backend,
  { prefix, pageSize, max }: { prefix: string; pageSize: number; max: number },
): AsyncGenerator<LeasePage> {
  const list = listOf(backend)
  let cursor: string | undefined
  let seen = 0
  do {
    const limit = Math.min(pageSize, max - seen)
    if (limit <= 0) return
    const page = await list({ prefix, limit, ...(cursor === undefined ? {} : { cursor }) })
    seen += page.leases.length
    yield page
    cursor = page.cursor
  } while (cursor !== undefined)
}
