import { expect, test } from 'vitest'
import { quietPgSslModeWarning, quietSdkNodeVersionWarning } from '../src/process-warnings.js'
import { cli, isOneLine, serverPicked } from './e2e/harness.js'

// Found by a review (session 36): on Node.js 20 every DynamoDB command printed the AWS SDK's nine-line
// NodeVersionSupportWarning above its one line. A second review found that replacing Node's printer
// of warnings to drop it also ignored --no-warnings and --trace-warnings: the SDK's own switch it is.
test("the SDK's note on Node.js versions to come is turned off by its own switch, unless the environment set it", () => {
  const env: NodeJS.ProcessEnv = {}
  quietSdkNodeVersionWarning(env)
  expect(env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED).toBe('true')
  const chosen: NodeJS.ProcessEnv = { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'false' }
  quietSdkNodeVersionWarning(chosen)
  expect(chosen.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED).toBe('false')
})

test('a DynamoDB store failure is one line on stderr, on every Node.js version', async (context) => {
  const endpoint = process.env.DYNAMODB_LOCAL_ENDPOINT
  if (!endpoint) {
    console.warn('[worklease cli] skipped: DYNAMODB_LOCAL_ENDPOINT is not set (scripts/servers.sh sets it)')
    context.skip()
  }
  const store = `${endpoint!.replace(/^http/, 'dynamodb')}?region=us-east-1&table=no_such_table&listIndex=idx`
  const { code, stderr } = await cli(['show', 'x', '--store', store])
  expect(code).toBe(1)
  expect(stderr).toMatch(/^worklease: the store failed: /)
  expect(isOneLine(stderr)).toBe(true)
})

// Found by a review: `--store "postgres://...?sslmode=require"` printed pg's nine-line note on its next
// major version above the one line of the failure. pg emits it with process.emitWarning, unswitchable.
test("pg's note on sslmode in its next major version is dropped; every other warning goes on as before", () => {
  const emitted: unknown[][] = []
  const target = {
    emitWarning: ((...args: unknown[]) => emitted.push(args)) as NodeJS.Process['emitWarning'],
  }
  quietPgSslModeWarning(target)
  target.emitWarning(
    "SECURITY WARNING: The SSL modes 'prefer', 'require', and 'verify-ca' are treated as aliases for 'verify-full'.\nIn the next major version ...",
  )
  const other = new Error('SECURITY WARNING: something else')
  target.emitWarning('a warning of its own', 'DeprecationWarning', 'DEP0')
  target.emitWarning(other)
  expect(emitted).toEqual([['a warning of its own', 'DeprecationWarning', 'DEP0'], [other]])
})

const ON_POSTGRES = serverPicked('postgres', "the postgres sslmode warning's end-to-end test")

test.skipIf(!ON_POSTGRES)(
  'postgres with ?sslmode=require: the failure or the answer alone, no warning above it',
  async () => {
    const url = new URL(process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
    url.searchParams.set('sslmode', 'require')
    // The test server may offer TLS with a certificate of its own (exit 1) or none (exit 1), or trust it.
    const { code, stderr } = await cli(['show', 'no-such-lease', '--store', url.href])
    expect(stderr).not.toMatch(/SECURITY WARNING|Warning:/)
    expect(stderr).toMatch(/^worklease: /)
    expect(isOneLine(stderr)).toBe(true)
    expect([1, 3]).toContain(code)
  },
)
