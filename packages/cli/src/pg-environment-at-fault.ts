/**
 * The PG* environment variables that make pg refuse settings it parses with `parse`, when the URL
 * alone would do: pg reads PGSSLMODE, PGSSLNEGOTIATION and the like on every parse, and what it
 * refused then read as a bad URL. Empty when the URL is at fault (it fails without them too).
 * Each variable is left out in turn, then all together, and put back before this returns.
 *
 * ```ts
 * pgEnvironmentAtFault(() => new pg.Client({ connectionString: url })) // ['PGSSLNEGOTIATION']
 * ```
 */
export function pgEnvironmentAtFault(parse: () => void): string[] {
  const names = Object.keys(process.env).filter((name) => name.startsWith('PG'))
  const parsesWithout = (left: readonly string[]): boolean => {
    const saved = left.map((name) => [name, process.env[name]] as const)
    for (const name of left) delete process.env[name]
    try {
      parse()
      return true
    } catch {
      return false
    } finally {
      for (const [name, value] of saved) process.env[name] = value
    }
  }
  const alone = names.filter((name) => parsesWithout([name]))
  if (alone.length > 0) return alone
  return names.length > 0 && parsesWithout(names) ? names : []
}
