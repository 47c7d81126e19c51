import Database from 'better-sqlite3'

/**
 * The downstream store the counter workload increments: a SQLite file shared by every worker process.
 * `counters(name, value, token)` holds one counter per shard and mode; `progress(worker, n)` counts the
 * increments each logical worker had acknowledged, written in the same transaction as the counter.
 */
export class CounterStore {
  readonly db: Database.Database

  constructor(file: string) {
    this.db = new Database(file, { timeout: 10_000 })
    this.db.pragma('journal_mode = WAL')
  }

  static create(file: string, counters: readonly string[], workers: readonly string[]): void {
    const store = new CounterStore(file)
    store.db.exec(
      'CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL, token INTEGER NOT NULL);' +
        'CREATE TABLE IF NOT EXISTS progress (worker TEXT PRIMARY KEY, n INTEGER NOT NULL);',
    )
    const counter = store.db.prepare('INSERT OR IGNORE INTO counters VALUES (?, 0, 0)')
    const progress = store.db.prepare('INSERT OR IGNORE INTO progress VALUES (?, 0)')
    store.db.transaction(() => {
      for (const name of counters) counter.run(name)
      for (const worker of workers) progress.run(worker)
    })()
    store.close()
  }

  progress(worker: string): number {
    return (this.db.prepare('SELECT n FROM progress WHERE worker = ?').get(worker) as { n: number }).n
  }

  /**
   * Fenced, step 1: claims the counter for `token` and reads it, in one statement. Fails (null) if a
   * larger token already claimed it: this holder has been superseded.
   */
  claim(name: string, token: bigint): number | null {
    const row = this.db
      .prepare('UPDATE counters SET token = ? WHERE name = ? AND token <= ? RETURNING value')
      .get(token, name, token) as { value: number } | undefined
    return row ? row.value : null
  }

  /**
   * Fenced, step 2: writes `value` only if no larger token claimed the counter since, and counts the
   * increment in the same transaction. Returns whether it landed.
   */
  fencedWrite(name: string, token: bigint, value: number, worker: string): boolean {
    return this.db
      .transaction(() => {
        const { changes } = this.db
          .prepare('UPDATE counters SET value = ? WHERE name = ? AND token = ?')
          .run(value, name, token)
        if (changes !== 1) return false
        this.db.prepare('UPDATE progress SET n = n + 1 WHERE worker = ?').run(worker)
        return true
      })
      .immediate()
  }

  /** Unfenced control: a plain read ... */
  read(name: string): number {
    return (this.db.prepare('SELECT value FROM counters WHERE name = ?').get(name) as { value: number }).value
  }

  /** ... and a plain write, trusting the lease alone. */
  unfencedWrite(name: string, value: number, worker: string): void {
    this.db
      .transaction(() => {
        this.db.prepare('UPDATE counters SET value = ? WHERE name = ?').run(value, name)
        this.db.prepare('UPDATE progress SET n = n + 1 WHERE worker = ?').run(worker)
      })
      .immediate()
  }

  /** The sum of one mode's counters, and of the increments its workers had acknowledged. */
  totals(mode: 'fenced' | 'unfenced' | 'runner'): { value: number; acknowledged: number } {
    const value = (
      this.db
        .prepare("SELECT COALESCE(SUM(value), 0) AS v FROM counters WHERE name LIKE 'counter-' || ? || '-%'")
        .get(mode) as {
        v: number
      }
    ).v
    const acknowledged = (
      this.db
        .prepare("SELECT COALESCE(SUM(n), 0) AS v FROM progress WHERE worker LIKE ? || '-%'")
        .get(mode) as {
        v: number
      }
    ).v
    return { value, acknowledged }
  }

  close(): void {
    this.db.close()
  }
}
