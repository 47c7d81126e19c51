import { isWorkleaseError, type LeaseRecord } from '@worklease/spec'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  ANSI,
  cleanEnv,
  cli,
  isOneLine,
  openTestStore,
  type StoreKind,
  serverPicked,
  spawnCli,
  type TestStore,
} from './harness.js'

const TTL = 120_000

/**
 * The command line end to end on one real store: the built binary spawned with piped stdio against a
 * table of the test's own, which the test fills and checks through the driver itself.
 */
export function e2eSuite(kind: StoreKind): void {
  const on = serverPicked(kind, `the ${kind} end-to-end tests`)
  describe.skipIf(!on)(`worklease on ${kind}`, () => {
    let store: TestStore
    const records: Record<string, LeaseRecord> = {}

    beforeAll(async () => {
      store = await openTestStore(kind)
      const { backend } = store
      records['invoice-1'] = await backend.acquire('invoice-1', 'worker-a', TTL)
      records['invoice-2'] = await backend.acquire('invoice-2', 'worker-b', TTL)
      records['invoice-10'] = await backend.acquire('invoice-10', 'worker-a', TTL)
      records['revoke-me'] = await backend.acquire('revoke-me', 'worker-wedged', TTL)
      const report = await backend.acquire('report-1', 'worker-c', TTL)
      await backend.release(report)
    })
    afterAll(async () => {
      await store?.close()
    })

    const jsonLines = (stdout: string) =>
      stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>)

    test('list prints a table of every lease in workId order', async () => {
      const { code, stdout, stderr } = await cli(['list', ...store.args])
      expect(stderr).toBe('')
      expect(code).toBe(0)
      const lines = stdout.trimEnd().split('\n')
      expect(lines[0]).toMatch(/^WORK ID\s+STATUS\s+HOLDER\s+TOKEN/)
      expect(lines.slice(1).map((line) => line.split(/\s+/)[0])).toEqual([
        'invoice-1',
        'invoice-10',
        'invoice-2',
        'report-1',
        'revoke-me',
      ])
      expect(lines[1]).toMatch(/^invoice-1\s+held\s+worker-a\s+1\b/)
      expect(stdout).toMatch(/report-1\s+released/)
    })

    // Found in session 40: each page was laid out on its own, so with small pages a narrower page
    // shifted its columns left of the wider one above it.
    test('list page by page keeps its columns: a column widens as needed and never narrows', async () => {
      const { code, stdout } = await cli(['list', '--page-size', '1', ...store.args])
      expect(code).toBe(0)
      const rows = stdout.trimEnd().split('\n').slice(1)
      expect(rows.map((line) => line.split(/\s+/)[0])).toEqual([
        'invoice-1',
        'invoice-10',
        'invoice-2',
        'report-1',
        'revoke-me',
      ])
      // The status and holder columns never move left from one row to the next (before: invoice-2's
      // status began a column left of invoice-10's).
      const starts = (line: string) => [line.search(/ (held|released) /) + 1, line.search(/ worker-/) + 1]
      for (let r = 1; r < rows.length; r++) {
        const [status, holder] = starts(rows[r]!)
        const [above, holderAbove] = starts(rows[r - 1]!)
        expect(status, rows[r]).toBeGreaterThanOrEqual(above!)
        expect(holder, rows[r]).toBeGreaterThanOrEqual(holderAbove!)
      }
    })

    test('list --json prints one lease per line with the documented fields', async () => {
      const { code, stdout } = await cli(['list', '--json', ...store.args])
      expect(code).toBe(0)
      const rows = jsonLines(stdout)
      expect(rows.map((row) => row.workId)).toEqual([
        'invoice-1',
        'invoice-10',
        'invoice-2',
        'report-1',
        'revoke-me',
      ])
      expect(rows[0]).toMatchObject({
        workId: 'invoice-1',
        holderId: 'worker-a',
        fencingToken: '1',
        status: 'held',
        free: false,
        released: false,
        checkpointBytes: null,
      })
      expect(rows[3]).toMatchObject({ workId: 'report-1', status: 'released', free: true, released: true })
      for (const row of rows) {
        expect(Object.keys(row).sort()).toEqual(
          [
            'workId',
            'holderId',
            'fencingToken',
            'status',
            'free',
            'released',
            'expiresAt',
            'expiresInMs',
            'checkpointBytes',
            'now',
          ].sort(),
        )
        expect(new Date(row.now as string).toISOString()).toBe(row.now)
      }
    })

    test('list takes a literal prefix and --limit', async () => {
      const prefixed = await cli(['list', 'invoice-1', '--json', ...store.args])
      expect(prefixed.code).toBe(0)
      expect(jsonLines(prefixed.stdout).map((row) => row.workId)).toEqual(['invoice-1', 'invoice-10'])

      const limited = await cli([
        'list',
        'invoice-',
        '--limit',
        '2',
        '--page-size',
        '1',
        '--json',
        ...store.args,
      ])
      expect(limited.code).toBe(0)
      expect(jsonLines(limited.stdout).map((row) => row.workId)).toEqual(['invoice-1', 'invoice-10'])

      const table = await cli(['list', '--limit', '1', ...store.args])
      expect(table.stdout.trimEnd().split('\n')).toHaveLength(2)

      const none = await cli(['list', 'nothing-', ...store.args])
      expect(none).toMatchObject({ code: 0, stdout: '' })
      expect(none.stderr).toMatch(/^no leases under "nothing-"\n$/)
    })

    test('show prints one lease, and exits 3 when there is none', async () => {
      const found = await cli(['show', 'invoice-10', ...store.args])
      expect(found.code).toBe(0)
      expect(found.stdout).toMatch(/^workId\s+invoice-10$/m)
      expect(found.stdout).toMatch(/^holder\s+worker-a$/m)
      expect(found.stdout).toMatch(/^status\s+held$/m)
      // The fixed wording is not escaped as an id is (review, session 39: "store\'s now").
      expect(found.stdout).toMatch(/^expires at\s+\S+Z \(.+ from the store's now\)$/m)

      const json = await cli(['show', 'invoice-1', '--json', ...store.args])
      expect(json.code).toBe(0)
      expect(JSON.parse(json.stdout)).toMatchObject({
        workId: 'invoice-1',
        holderId: 'worker-a',
        status: 'held',
      })

      // invoice- is a prefix of leases, but no lease itself.
      const missing = await cli(['show', 'invoice-', ...store.args])
      expect(missing.code).toBe(3)
      expect(missing.stdout).toBe('')
      expect(missing.stderr).toMatch(/^worklease: no lease for "invoice-" in /)
      expect(isOneLine(missing.stderr)).toBe(true)
    })

    test('revoke without --yes on a pipe refuses with exit 2 and revokes nothing', async () => {
      const { code, stdout, stderr } = await cli(['revoke', 'invoice-1', ...store.args])
      expect(code).toBe(2)
      expect(stdout).toBe('')
      expect(stderr).toMatch(/^worklease: refusing to revoke without --yes/)
      expect(isOneLine(stderr)).toBe(true)
      // Still held: its holder can renew.
      await store.backend.renew(records['invoice-1'] as LeaseRecord, TTL)
    })

    test('revoke --yes fences the holder; the next acquire gets token + 1 and an unclean handoff', async () => {
      const old = records['revoke-me'] as LeaseRecord
      const { code, stdout, stderr } = await cli(['revoke', 'revoke-me', '--yes', ...store.args])
      expect(stderr).toBe('')
      expect(code).toBe(0)
      expect(stdout).toMatch(/^revoked "revoke-me"/)

      const fenced = async (call: Promise<unknown>) => {
        const error = await call.then(
          () => undefined,
          (caught: unknown) => caught,
        )
        expect(isWorkleaseError(error, 'FENCED'), String(error)).toBe(true)
      }
      await fenced(store.backend.renew(old, TTL))
      await fenced(store.backend.checkpoint(old, new Uint8Array([1]), TTL))
      await fenced(store.backend.release(old))

      const next = await store.backend.acquire('revoke-me', 'worker-next', TTL)
      expect(next.fencingToken).toBe(old.fencingToken + 1n)
      expect((await store.backend.readCheckpoint(next)).cleanHandoff).toBe(false)

      // The old holder stays fenced after the handoff too, and a second revoke --json reports it.
      await fenced(store.backend.renew(old, TTL))
      const again = await cli(['revoke', 'revoke-me', '--yes', '--json', ...store.args])
      expect(again.code).toBe(0)
      expect(JSON.parse(again.stdout)).toEqual({
        workId: 'revoke-me',
        revoked: true,
        previous: { holderId: 'worker-next', fencingToken: String(next.fencingToken) },
      })
    })

    test('revoke of a lease that is not live exits 3', async () => {
      const { code, stderr } = await cli(['revoke', 'report-1', '--yes', ...store.args])
      expect(code).toBe(3)
      expect(stderr).toMatch(/^worklease: "report-1" was not held: nothing revoked\n$/)
    })

    test('a missing table is one line and exit 1', async () => {
      const { code, stdout, stderr } = await cli([
        'list',
        '--store',
        store.url,
        '--table',
        'cli_e2e_no_such_table',
      ])
      expect(code).toBe(1)
      expect(stdout).toBe('')
      expect(stderr).toMatch(/^worklease: the store failed: /)
      expect(isOneLine(stderr)).toBe(true)
    })

    test('piped output has no ANSI escapes, with or without NO_COLOR', async () => {
      for (const env of [
        cleanEnv(),
        cleanEnv({ NO_COLOR: '1' }),
        cleanEnv({ NO_COLOR: '1', TERM: 'xterm-256color' }),
      ]) {
        for (const args of [['list'], ['show', 'invoice-1'], ['watch', '--count', '1']]) {
          const { code, stdout, stderr } = await cli([...args, ...store.args], env)
          expect(code).toBe(0)
          expect(stdout).not.toMatch(ANSI)
          expect(stderr).not.toMatch(ANSI)
        }
      }
    })

    test('watch --count 2 --interval 100 prints change lines on a pipe, then exits', async () => {
      const { code, stdout, stderr } = await cli([
        'watch',
        'invoice-',
        '--count',
        '2',
        '--interval',
        '100',
        ...store.args,
      ])
      expect(stderr).toBe('')
      expect(code).toBe(0)
      const lines = stdout.trimEnd().split('\n')
      // The first read adds every lease; the second, nothing having changed, prints nothing.
      expect(lines).toHaveLength(3)
      expect(lines[0]).toMatch(/^\S+Z added "invoice-1" held holder="worker-a" token=1$/)
      expect(lines.map((line) => line.split(' ')[2])).toEqual(['"invoice-1"', '"invoice-10"', '"invoice-2"'])

      const json = await cli([
        'watch',
        'invoice-1',
        '--count',
        '2',
        '--interval',
        '100',
        '--json',
        ...store.args,
      ])
      expect(json.code).toBe(0)
      expect(jsonLines(json.stdout).map((row) => [row.change, row.workId])).toEqual([
        ['added', 'invoice-1'],
        ['added', 'invoice-10'],
      ])
    })

    // Found by a review (session 40): a checkpoint that changed the state's size was reported
    // "changed", on a line that showed nothing changed.
    test('watch reports a change of checkpoint size, and its line shows the size', async () => {
      const record = await store.backend.acquire('watched-1', 'worker-w', TTL)
      const watching = spawnCli(['watch', 'watched-', '--count', '2', '--interval', '1500', ...store.args])
      for (let i = 0; i < 200 && !watching.stdout().includes('added'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      await store.backend.checkpoint(record, new TextEncoder().encode('12345'), TTL)
      expect(await watching.exited).toBe(0)
      const lines = watching.stdout().trimEnd().split('\n')
      expect(lines).toEqual([
        expect.stringMatching(/ added "watched-1" held holder="worker-w" token=1$/),
        expect.stringMatching(/ changed "watched-1" held holder="worker-w" token=1 checkpoint=5B$/),
      ])
    })
  })
}
