import { startDynalite } from '@worklease/test-servers'
import type { TestProject } from 'vitest/node'

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string
    dynamoIsDynalite: boolean
  }
}

/**
 * The server of one project of vitest.config.ts: for `dynalite`, one in-memory dynalite for the whole
 * run, on 127.0.0.1 and a free port; for `dynamodb-local` and `endpoint`, the endpoint that
 * `DYNAMODB_LOCAL_ENDPOINT` or `DYNAMODB_ENDPOINT` names, and nothing is started.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const variable =
    project.name === 'dynamodb-local'
      ? 'DYNAMODB_LOCAL_ENDPOINT'
      : project.name === 'endpoint'
        ? 'DYNAMODB_ENDPOINT'
        : undefined
  if (variable) {
    const endpoint = process.env[variable]
    if (!endpoint) throw new Error(`dynamodb tests: project ${project.name} needs ${variable}`)
    project.provide('dynamoEndpoint', endpoint)
    project.provide('dynamoIsDynalite', false)
    console.log(`dynamodb tests (${project.name}): using ${variable}=${endpoint}`)
    return undefined
  }
  // Tables become ACTIVE at once: every test case creates its own.
  const server = await startDynalite({ in: 'process' })
  project.provide('dynamoEndpoint', server.endpoint)
  project.provide('dynamoIsDynalite', true)
  console.log(`dynamodb tests (${project.name}): dynalite on 127.0.0.1:${server.port} (in memory)`)
  return () => server.stop()
}
