import { PassThrough } from 'node:stream'
import { isWorkleaseError, type LeaseRecord, type RevokeOptions } from '@worklease/spec'
import { afterAll, beforeAll, beforeEach, describe, expect, test, vi } from 'vitest'
import { run } from '../src/run.js'
import { openTestStore, type TestStore } from './e2e/harness.js'

const TTL = 600_000

/** What the command's backend was asked to revoke, and what runs just before the call is sent. */
const revokes: Array<{ workId: string; options: RevokeOptions | undefined }> = []
let beforeRevoke: (() => Promise<void>) | undefined

// The command opens its own backend from --store; this hands it back with a revoke that first lets
// the test act, at the last moment before the request leaves: after every read the command makes.
vi.mock('../src/open-backend.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/open-backend.js')>()
  return {
    ...real,
    openBackend: async (...args: Parameters<typeof real.openBackend>) => {
      const opened = await real.openBackend(...args)
      const { backend } = opened
      const revoke = backend.revoke!.bind(backend)
      backend.revoke = async (workId: string, options?: RevokeOptions) => {
        revokes.push({ workId, options })
        await beforeRevoke?.()
        return revoke(workId, options)
      }
      return opened
    },
  }
})

/** Runs the command line in this process; `answer` is typed at revoke's question on a "terminal". */
async function cli(args: readonly string[], answer?: string) {
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  const output = { stdout: '', stderr: '' }
  stdout.on('data', (chunk: Buffer) => {
    output.stdout += chunk.toString()
  })
  stderr.on('data', (chunk: Buffer) => {
    output.stderr += chunk.toString()
  })
  const stdin = Object.assign(new PassThrough(), { isTTY: answer !== undefined })
  if (answer !== undefined) stdin.write(answer)
  const code = await run(args, { stdout, stderr, stdin, env: {} })
  return { code, ...output }
}

const outcome = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => 'ok',
    (error: unknown) => (isWorkleaseError(error) ? error.code : String(error)),
  )

/**
 * The window the confirmation re-read left open: the lease the operator approved ends, and another
 * holder takes it, after the command's last read and before its revoke reaches the store.
 */
describe('worklease revoke: a takeover after the last read is not revoked (sqlite)', () => {
  let store: TestStore
  beforeAll(async () => {
    store = await openTestStore('sqlite')
  })
  afterAll(async () => {
    await store?.close()
  })
  beforeEach(() => {
    revokes.length = 0
    beforeRevoke = undefined
  })

  /** worker-a holds `workId`; the takeover releases its lease and hands it to worker-b. */
  async function racedLease(workId: string) {
    const approved = await store.backend.acquire(workId, 'worker-a', TTL)
    const taken: { record?: LeaseRecord } = {}
    beforeRevoke = async () => {
      await store.backend.release(approved)
      taken.record = await store.backend.acquire(workId, 'worker-b', TTL)
    }
    return { approved, taken }
  }

  test('"y" to "held by worker-a (token 1)": worker-b, who took over since, keeps its lease (exit 5)', async () => {
    const { taken } = await racedLease('asked')
    const { code, stdout, stderr } = await cli(['revoke', 'asked', ...store.args], 'y\n')
    expect(taken.record?.fencingToken).toBe(2n)
    expect(await outcome(store.backend.renew(taken.record!, TTL))).toBe('ok')
    expect({ code, stdout }).toEqual({ code: 5, stdout: '' })
    expect(stderr).toMatch(
      /worklease: not revoked: "asked" changed before the revoke reached the store: it is now held by "worker-b" \(token 2\), not held by "worker-a" \(token 1\)\n$/,
    )
    expect(revokes.map(({ workId, options }) => [workId, options?.fencingToken])).toEqual([['asked', 1n]])
  })

  test('--yes --json: worker-b keeps its lease, and the output says nothing was revoked (exit 5)', async () => {
    const { taken } = await racedLease('scripted')
    const { code, stdout, stderr } = await cli(['revoke', 'scripted', '--yes', '--json', ...store.args])
    expect(await outcome(store.backend.renew(taken.record!, TTL))).toBe('ok')
    expect(code).toBe(5)
    expect(JSON.parse(stdout)).toEqual({
      workId: 'scripted',
      revoked: false,
      previous: { holderId: 'worker-a', fencingToken: '1' },
    })
    expect(stderr).toMatch(/not revoked: "scripted" changed before the revoke reached the store/)
  })

  test('without a takeover the approved tenure is revoked, named by its token', async () => {
    const approved = await store.backend.acquire('calm', 'worker-a', TTL)
    const { code, stdout } = await cli(['revoke', 'calm', ...store.args], 'y\n')
    expect({ code, stdout }).toEqual({
      code: 0,
      stdout: 'revoked "calm"; the next holder gets an unclean handoff\n',
    })
    expect(await outcome(store.backend.renew(approved, TTL))).toBe('FENCED')
    expect(revokes.map(({ workId, options }) => [workId, options?.fencingToken])).toEqual([['calm', 1n]])
  })

  test('a lease that was free when read sends no revoke: a newcomer after the read is never ended (exit 3)', async () => {
    await store.backend.release(await store.backend.acquire('idle', 'worker-a', TTL))
    let newcomer: LeaseRecord | undefined
    beforeRevoke = async () => {
      newcomer = await store.backend.acquire('idle', 'worker-b', TTL)
    }
    const { code, stderr } = await cli(['revoke', 'idle', '--yes', ...store.args])
    newcomer ??= await store.backend.acquire('idle', 'worker-b', TTL)
    expect(await outcome(store.backend.renew(newcomer, TTL))).toBe('ok')
    expect({ code, stderr }).toEqual({ code: 3, stderr: 'worklease: "idle" was not held: nothing revoked\n' })
    expect(revokes).toEqual([])
  })
})
