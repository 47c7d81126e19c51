import { CompiledQuery, type RawBuilder } from 'kysely'

/** Stands in for the value at `index` while a statement's shape is compiled. */
class Slot {
  constructor(readonly index: number) {}
}

/** A statement compiled once: its text, and which value goes into each placeholder, in order. */
interface Shape {
  readonly sql: string
  readonly valueAt: readonly number[]
}

/**
 * Compiles each statement shape once and binds the values of every call to it. Building and compiling
 * a Kysely template costs about 2 µs a statement (its nodes are frozen one by one, then walked into
 * text), a twentieth of a whole lease cycle on SQLite; binding is an array and a CompiledQuery. The
 * text sent is the one the template compiles to, so logs and statement counts do not change.
 *
 * A template is called once per key, with stand-ins for its values: it must place each one as a
 * parameter and never look at it, and everything that changes the text (a flag, an optional
 * condition) must be part of the key.
 *
 * ```ts
 * const statements = new StatementCache((query) => query.compile(db))
 * const renew = statements.bind('renew', [workId, ttlMs], (id, ttl) => sql`UPDATE ... WHERE work_id = ${id}`)
 * await db.executeQuery(renew)
 * ```
 */
export class StatementCache {
  readonly #compile: (query: RawBuilder<unknown>) => CompiledQuery<unknown>
  readonly #shapes = new Map<string, Shape>()

  constructor(compile: (query: RawBuilder<unknown>) => CompiledQuery<unknown>) {
    this.#compile = compile
  }

  bind<R>(
    key: string,
    values: readonly unknown[],
    template: (...values: unknown[]) => RawBuilder<R>,
  ): CompiledQuery<R> {
    let shape = this.#shapes.get(key)
    if (shape === undefined) {
      shape = this.#shapeOf(key, values.length, template)
      this.#shapes.set(key, shape)
    }
    const parameters = new Array<unknown>(shape.valueAt.length)
    for (let i = 0; i < parameters.length; i++) parameters[i] = values[shape.valueAt[i]!]
    return CompiledQuery.raw(shape.sql, parameters) as CompiledQuery<R>
  }

  /** A statement whose shape changes with its values (a batch of any size): compiled every call. */
  compile<R>(query: RawBuilder<R>): CompiledQuery<R> {
    return this.#compile(query) as CompiledQuery<R>
  }

  #shapeOf(key: string, count: number, template: (...values: unknown[]) => RawBuilder<unknown>): Shape {
    const slots = Array.from({ length: count }, (_, index) => new Slot(index))
    const compiled = this.#compile(template(...slots))
    const valueAt = compiled.parameters.map((parameter) => {
      if (!(parameter instanceof Slot)) {
        throw new Error(`statement ${key}: a parameter is not one of the values it was given`)
      }
      return parameter.index
    })
    return { sql: compiled.sql, valueAt }
  }
}
