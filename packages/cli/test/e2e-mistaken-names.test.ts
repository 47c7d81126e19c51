import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLeaseTable, KyselyBackend } from '@worklease/kysely'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { cli } from './e2e/harness.js'

const TTL = 600_000

// Found by a review (session 36): an empty name meant the default table, so a revoke ended a lease
// in another table than the one meant; a usage error waited for the store; and a workId the store
// holds but no lease can have was reported as the command line's fault.
describe('names that are mistakes, and a store holding what no lease can', () => {
  let dir: string
  let file: string
  let db: Kysely<unknown>
  let inDefault: KyselyBackend
  let inOther: KyselyBackend
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'worklease-cli-names-'))
    file = join(dir, 'leases.db')
    db = new Kysely({ dialect: new SqliteDialect({ database: new Database(file) }) })
    await createLeaseTable(db, { dialect: 'sqlite' })
    await createLeaseTable(db, { table: 'other', dialect: 'sqlite' })
    inDefault = new KyselyBackend({ db, dialect: 'sqlite' })
    inOther = new KyselyBackend({ db, table: 'other', dialect: 'sqlite' })
  })
  afterAll(async () => {
    await db.destroy()
    rmSync(dir, { recursive: true, force: true })
  })

  test('an empty --table (--table "$UNSET") is a usage error: revoke ends nobody in the default table', async () => {
    await inDefault.acquire('job-1', 'worker-1', TTL)
    const { code, stdout, stderr } = await cli([
      'revoke',
      'job-1',
      '--yes',
      '--store',
      `sqlite:${file}`,
      '--table',
      '',
    ])
    expect({ code, stdout, stderr }).toEqual({
      code: 2,
      stdout: '',
      stderr: expect.stringMatching(/--table is empty/),
    })
    const [listed] = (await inDefault.list!({ prefix: 'job-1' })).leases
    expect(listed).toMatchObject({ holderId: 'worker-1', released: false })
  })

  test.each([
    ['sqlite', (f: string) => `sqlite:${f}?table=`],
    ['postgres', () => 'postgres://postgres@127.0.0.1:1/test?table='],
    ['mongodb', () => 'mongodb://127.0.0.1:1/db?collection='],
    ['dynamodb', () => 'dynamodb://127.0.0.1:1?region=r&table=t&listIndex='],
  ])('an empty parameter in a %s URL is a usage error, before the store is opened', async (_, store) => {
    const { code, stdout, stderr } = await cli(['show', 'job-2', '--store', store(file)])
    expect({ code, stdout, stderr }).toEqual({
      code: 2,
      stdout: '',
      stderr: expect.stringMatching(/= is empty/),
    })
  })

  test('revoke without --yes on a pipe is a usage error before the store is opened (here: down)', async () => {
    const { code, stderr } = await cli(['revoke', 'job-1', '--store', 'postgres://postgres@127.0.0.1:1/test'])
    expect({ code, stderr }).toEqual({ code: 2, stderr: expect.stringMatching(/without --yes/) })
  })

  test('a listed workId over 255 code units (a row written by hand) is a store failure, not a usage error', async () => {
    await inOther.acquire('a-1', 'h', TTL)
    await inOther.acquire('c-1', 'h', TTL)
    const raw = new Database(file)
    raw
      .prepare('INSERT INTO other (work_id, token, holder, expires_at) VALUES (?, 1, ?, ?)')
      .run(`b-${'x'.repeat(300)}`, 'h', Date.now() + TTL)
    raw.close()
    const { code, stderr } = await cli([
      'list',
      '--store',
      `sqlite:${file}`,
      '--table',
      'other',
      '--page-size',
      '1',
    ])
    expect({ code, stderr }).toEqual({
      code: 1,
      stderr: expect.stringMatching(/lists a workId no lease can have/),
    })
    // Found by a second review: a cursor after the last lease wanted was checked too, and never sent.
    const store = ['--store', `sqlite:${file}`, '--table', 'other', '--page-size', '1']
    const limited = await cli(['list', ...store, '--limit', '2'])
    expect({ code: limited.code, stderr: limited.stderr }).toEqual({ code: 0, stderr: '' })
  })
})
