export {
  type DynaliteServer,
  dynaliteArgs,
  dynaliteCliPath,
  dynaliteVersion,
  startDynalite,
} from './dynalite.mjs'
export {
  buildFerretdb,
  FERRETDB_VERSION,
  type FerretdbServer,
  ferretdbArgs,
  ferretdbBinaryPath,
  startFerretdb,
} from './ferretdb.mjs'
export {
  GENUINE_SERVERS,
  type GenuineServer,
  genuineServers,
  mongoServer,
  notSetReason,
} from './genuine-servers.mjs'
