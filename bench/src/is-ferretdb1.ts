/**
 * Whether a server label names FerretDB 1.x: what the bench says about FerretDB's SQLite handler
 * (a findAndModify is a read then a write) holds for it only, not for FerretDB 2 or MongoDB.
 */
export const isFerretdb1 = (server: string | undefined): boolean => /FerretDB v?1\./.test(server ?? '')
