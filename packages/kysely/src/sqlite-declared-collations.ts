/** A token of SQL text: a word, a quoted name or string (its text unquoted), or a punctuation mark. */
interface Token {
  readonly text: string
  readonly kind: 'word' | 'name' | 'string' | 'mark'
  /** How many parentheses it is inside (a parenthesis itself: those around it). */
  readonly depth: number
}

const WORD = /[\p{L}\p{N}_$]/u
const ID_COLUMNS = new Set(['work_id', 'holder'])
const TABLE_CONSTRAINTS = new Set(['CONSTRAINT', 'PRIMARY', 'UNIQUE', 'CHECK', 'FOREIGN'])

/**
 * The collations other than BINARY that a SQLite `CREATE TABLE` statement declares for the id
 * columns: on their definitions (`work_id TEXT COLLATE NOCASE`), or where a primary key or unique
 * constraint names them (`PRIMARY KEY (work_id COLLATE NOCASE)`, which decides the row an acquire's
 * upsert meets). SQLite keeps a column's collation nowhere but in this text. Comments, string
 * literals and other columns are no declaration; `COLLATE"NOCASE"`, or a comment between the keyword
 * and the name, is one.
 *
 * ```ts
 * foldingCollations('CREATE TABLE t (work_id TEXT COLLATE NOCASE)') // ['work_id is declared COLLATE NOCASE']
 * ```
 */
export function foldingCollations(createTable: string): string[] {
  const tokens = tokenize(createTable)
  const open = tokens.findIndex((token) => token.text === '(' && token.kind === 'mark')
  const problems: string[] = []
  let definition: Token[] = []
  for (const token of tokens.slice(open + 1)) {
    // A comma between definitions, or the parenthesis that closes the table's (its depth 0).
    const ends =
      token.kind === 'mark' &&
      ((token.text === ',' && token.depth === 1) || (token.text === ')' && token.depth === 0))
    if (!ends) {
      definition.push(token)
      continue
    }
    problems.push(...judge(definition))
    definition = []
    if (token.text === ')') break
  }
  return problems
}

function judge(definition: readonly Token[]): string[] {
  const [first] = definition
  if (first === undefined) return []
  const problems: string[] = []
  const constraint = first.kind === 'word' && TABLE_CONSTRAINTS.has(first.text.toUpperCase())
  for (const [i, token] of definition.entries()) {
    if (token.kind !== 'word' || token.text.toUpperCase() !== 'COLLATE') continue
    const collation = definition[i + 1]
    if (collation === undefined || collation.kind === 'mark' || collation.text.toUpperCase() === 'BINARY')
      continue
    if (constraint) {
      // In a key's column list: `work_id COLLATE NOCASE`.
      const column = definition[i - 1]
      if (column && column.kind !== 'mark' && ID_COLUMNS.has(column.text.toLowerCase()))
        problems.push(`a key compares ${column.text.toLowerCase()} under COLLATE ${collation.text}`)
    } else if (first.kind !== 'mark' && ID_COLUMNS.has(first.text.toLowerCase()) && token.depth === 1) {
      // The column's own clause, not one inside its CHECK or DEFAULT expression.
      problems.push(`${first.text.toLowerCase()} is declared COLLATE ${collation.text}`)
    }
  }
  return problems
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = []
  let depth = 0
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (/\s/.test(c)) {
      i++
    } else if (text.startsWith('--', i)) {
      const end = text.indexOf('\n', i)
      i = end < 0 ? text.length : end + 1
    } else if (text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2)
      i = end < 0 ? text.length : end + 2
    } else if (c === "'" || c === '"' || c === '`') {
      // A quote inside is written twice.
      let j = i + 1
      let unquoted = ''
      while (j < text.length && !(text[j] === c && text[j + 1] !== c)) {
        unquoted += text[j]
        j += text[j] === c ? 2 : 1
      }
      tokens.push({ text: unquoted, kind: c === "'" ? 'string' : 'name', depth })
      i = j + 1
    } else if (c === '[') {
      const end = text.indexOf(']', i)
      tokens.push({ text: text.slice(i + 1, end < 0 ? text.length : end), kind: 'name', depth })
      i = end < 0 ? text.length : end + 1
    } else if (WORD.test(c)) {
      let j = i
      while (j < text.length && WORD.test(text[j]!)) j++
      tokens.push({ text: text.slice(i, j), kind: 'word', depth })
      i = j
    } else {
      if (c === ')') depth--
      tokens.push({ text: c, kind: 'mark', depth })
      if (c === '(') depth++
      i++
    }
  }
  return tokens
}
