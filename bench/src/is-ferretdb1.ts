/**
 * Whether a server label names FerretDB 1.x: what the bench says about FerretDB's SQLite handler
 * (a findAndModify is a read then a write) holds for it only, not for FerretDB 2 or MongoDB.
 */
export const isFerretdb1 = (server: string | undefined): boolean => /FerretDB v?1\./.test(server ?? '')

/**
 * FerretDB 1.x's version from a `buildInfo` reply (it adds `ferretdbVersion`; FerretDB 2 and MongoDB
 * do not), or undefined for any other server.
 */
export function ferretdb1Version(buildInfo: { ferretdbVersion?: unknown }): string | undefined {
  const version = buildInfo.ferretdbVersion
  return typeof version === 'string' && /^v?1\./.test(version) ? version : undefined
}
