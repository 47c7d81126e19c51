import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { ExitCode } from '../src/exit-code.js'
import { openBackend } from '../src/open-backend.js'
import { parseStoreUrl } from '../src/store-url.js'

/**
 * Which keys and region the CLI's DynamoDB client signs with, read off the Authorization header an
 * endpoint of ours receives (`Credential=<key>/<date>/<region>/dynamodb/aws4_request`). Found by a
 * review: an endpoint always got placeholder keys and us-east-1, whatever the profile said.
 */
describe('DynamoDB: the keys and region the SDK finds are the ones used', () => {
  const saved = { ...process.env }
  const authorizations: string[] = []
  let server: Server
  let dir: string

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'worklease-aws-'))
    writeFileSync(
      join(dir, 'credentials'),
      '[prod]\naws_access_key_id = AKIAPROFILEKEY000000\naws_secret_access_key = profileSecret\n',
    )
    writeFileSync(join(dir, 'config'), '[profile prod]\nregion = eu-west-1\n')
    writeFileSync(
      join(dir, 'default'),
      '[default]\naws_access_key_id = AKIADEFAULTKEY000000\naws_secret_access_key = defaultSecret\n',
    )
    writeFileSync(join(dir, 'default-config'), '[default]\nregion = ap-east-1\n')
    server = createServer((request, response) => {
      authorizations.push(String(request.headers.authorization))
      response.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' })
      response.end(
        JSON.stringify({
          __type: 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException',
          message: 'no',
        }),
      )
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  })
  afterEach(() => {
    process.env = { ...saved }
    authorizations.length = 0
  })
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
    rmSync(dir, { recursive: true, force: true })
  })

  /** Only the SDK's own variables, as the test sets them: none of the machine's. */
  function awsEnvironment(variables: Record<string, string>) {
    for (const name of Object.keys(process.env)) if (name.startsWith('AWS_')) delete process.env[name]
    Object.assign(process.env, { AWS_EC2_METADATA_DISABLED: 'true' }, variables)
  }

  async function credentialSent(url: string): Promise<string> {
    const store = await openBackend(parseStoreUrl(url, {}), undefined)
    try {
      await store.backend.acquire('x', 'holder', 1_000).catch(() => undefined)
    } finally {
      await store.close()
    }
    return (
      /Credential=([^/]+)\/\d+\/([^/]+)\//
        .exec(authorizations[0] ?? '')
        ?.slice(1)
        .join(' ') ?? 'none'
    )
  }

  const endpoint = () => `dynamodb://127.0.0.1:${(server.address() as AddressInfo).port}?table=tbl`

  test("a profile's keys and region, with an endpoint given", async () => {
    awsEnvironment({
      AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials'),
      AWS_CONFIG_FILE: join(dir, 'config'),
      AWS_PROFILE: 'prod',
    })
    expect(await credentialSent(endpoint())).toBe('AKIAPROFILEKEY000000 eu-west-1')
  })

  test('?region= over the profile', async () => {
    awsEnvironment({
      AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials'),
      AWS_CONFIG_FILE: join(dir, 'config'),
      AWS_PROFILE: 'prod',
    })
    expect(await credentialSent(`${endpoint()}&region=ap-south-1`)).toBe('AKIAPROFILEKEY000000 ap-south-1')
  })

  // Found by the review of that change: a loopback endpoint skipped the lookup whatever the files
  // held, and signed with placeholders though a default profile had keys (DynamoDB Local keeps a
  // database per key and region: the CLI looked in another one than the app).
  test("a default profile's keys and region, with no profile named", async () => {
    awsEnvironment({
      AWS_SHARED_CREDENTIALS_FILE: join(dir, 'default'),
      AWS_CONFIG_FILE: join(dir, 'default-config'),
    })
    expect(await credentialSent(endpoint())).toBe('AKIADEFAULTKEY000000 ap-east-1')
  })

  test('credentials files with nothing for the profile: an endpoint of your own gets placeholders', async () => {
    awsEnvironment({
      AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials'),
      AWS_CONFIG_FILE: join(dir, 'config'),
    })
    expect(await credentialSent(endpoint())).toBe('worklease us-east-1')
  })

  test('no keys and no region anywhere: an endpoint of your own gets placeholders and us-east-1', async () => {
    awsEnvironment({ AWS_SHARED_CREDENTIALS_FILE: join(dir, 'none'), AWS_CONFIG_FILE: join(dir, 'none') })
    expect(await credentialSent(endpoint())).toBe('worklease us-east-1')
  })

  // Found by the review of that fix: any failed lookup fell back to the placeholders, so a profile
  // misspelt (or wanting MFA, or an SSO login) signed with them and failed far from its cause.
  test("a profile that cannot be read is the SDK's error, not placeholder keys", async () => {
    awsEnvironment({
      AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials'),
      AWS_CONFIG_FILE: join(dir, 'config'),
      AWS_PROFILE: 'prdo',
    })
    const store = await openBackend(parseStoreUrl(endpoint(), {}), undefined)
    try {
      const error = await store.backend.acquire('x', 'holder', 1_000).catch((e: unknown) => e)
      expect((error as Error).name).toBe('CredentialsProviderError')
    } finally {
      await store.close()
    }
    expect(authorizations).toEqual([])
  })

  test('no region anywhere for AWS itself: a usage error, not us-east-1', async () => {
    awsEnvironment({ AWS_SHARED_CREDENTIALS_FILE: join(dir, 'none'), AWS_CONFIG_FILE: join(dir, 'none') })
    await expect(openBackend(parseStoreUrl('dynamodb://?table=tbl', {}), undefined)).rejects.toMatchObject({
      exitCode: ExitCode.USAGE,
      message: expect.stringMatching(/no AWS region/),
    })
  })
})
