import { mongoServer, startFerretdb } from '@worklease/test-servers'
import { MongoClient } from 'mongodb'
import type { TestProject } from 'vitest/node'

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where the tests' server listens. */
    mongodbUrl: string
    /** `buildInfo.ferretdbVersion` when the server is FerretDB, else `null` (MongoDB). */
    ferretdbVersion: string | null
  }
}

/**
 * Gives the tests a server: the one MONGODB_URL names (a real MongoDB), else FerretDB 2.7 on
 * PostgreSQL 18 + DocumentDB from scripts/servers.sh (FERRETDB2_URL), whose atomic findAndModify
 * judges the race cases; else, on a machine without those servers, a throwaway FerretDB 1.24 on
 * 127.0.0.1, built on first use and stopped when the run ends, which skips the race cases.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const found = mongoServer()
  const variable = found?.variable
  const external = found?.url
  if (!external) {
    console.error(
      'worklease mongodb tests: neither MONGODB_URL nor FERRETDB2_URL is set (scripts/servers.sh start); ' +
        'falling back to FerretDB 1.24, whose race cases are skipped',
    )
  }
  const server = external ? undefined : await startFerretdb()
  const url = external ?? server!.url
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 10_000 })
  try {
    const info = await client.db('admin').command({ buildInfo: 1 })
    // FerretDB 1.x says `ferretdbVersion`; 2.x says `ferretdb: { version }`.
    const reported = info.ferretdbVersion ?? info.ferretdb?.version
    const ferretdbVersion = typeof reported === 'string' ? reported : null
    console.error(
      `worklease mongodb tests: ${ferretdbVersion ? `FerretDB ${ferretdbVersion}` : `MongoDB ${info.version}`} at ${
        variable ?? url
      }`,
    )
    project.provide('mongodbUrl', url)
    project.provide('ferretdbVersion', ferretdbVersion)
  } catch (error) {
    await server?.stop()
    throw error
  } finally {
    await client.close()
  }
  return async () => {
    await server?.stop()
  }
}
