import { expect, test } from 'vitest'
import { quietSdkNodeVersionWarning } from '../src/process-warnings.js'
import { cli, isOneLine } from './e2e/harness.js'

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
