import { MongoClient } from 'mongodb'
import type { TestProject } from 'vitest/node'
import { startFerretdb } from '../scripts/ferretdb.mjs'

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where the tests' server listens. */
    mongodbUrl: string
    /** `buildInfo.ferretdbVersion` when the server is FerretDB, else `null` (MongoDB). */
    ferretdbVersion: string | null
  }
}

/**
 * Gives the tests a server: the one MONGODB_URL names (a real MongoDB judges the race cases), or else
 * a throwaway FerretDB on 127.0.0.1, built on first use and stopped when the run ends.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.MONGODB_URL
  const server = external ? undefined : await startFerretdb()
  const url = external ?? server!.url
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 10_000 })
  try {
    const info = await client.db('admin').command({ buildInfo: 1 })
    const ferretdbVersion = typeof info.ferretdbVersion === 'string' ? info.ferretdbVersion : null
    console.error(
      `worklease mongodb tests: ${ferretdbVersion ? `FerretDB ${ferretdbVersion}` : `MongoDB ${info.version}`} at ${
        external ? 'MONGODB_URL' : url
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
