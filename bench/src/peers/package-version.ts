import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

/** The installed version of `name` (read from its package.json, found above its entry point). */
export function packageVersion(name: string, from: string = import.meta.url): string {
  let dir = dirname(createRequire(from).resolve(name))
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string
        version?: string
      }
      if (pkg.name === name && pkg.version) return pkg.version
    } catch {}
    const parent = dirname(dir)
    if (parent === dir) return '?'
    dir = parent
  }
}
