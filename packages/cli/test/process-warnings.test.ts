import { EventEmitter } from 'node:events'
import { PassThrough } from 'node:stream'
import { expect, test } from 'vitest'
import { printWarningsOnOneLine } from '../src/process-warnings.js'
import { cli, isOneLine } from './e2e/harness.js'

// Found by a review (session 36): on Node.js 20 every DynamoDB command printed the AWS SDK's nine-line
// NodeVersionSupportWarning above its one line.
test('a warning is printed on one line; the SDK’s note on Node.js versions to come is not printed', () => {
  const target = new EventEmitter()
  target.on('warning', () => {
    throw new Error("Node's own printer, which must be gone")
  })
  const stderr = new PassThrough()
  let written = ''
  stderr.on('data', (chunk: Buffer) => {
    written += chunk.toString()
  })
  printWarningsOnOneLine(target as never, stderr)
  const sdk = Object.assign(new Error('NodeVersionSupportWarning: The AWS SDK\nwill require node >=22.'), {
    name: 'Warning',
  })
  target.emit('warning', sdk)
  target.emit(
    'warning',
    Object.assign(new Error('first line\n  second line'), { name: 'DeprecationWarning' }),
  )
  expect(written).toBe('worklease: warning: DeprecationWarning: first line second line\n')
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
