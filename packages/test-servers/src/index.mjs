export { dynaliteArgs, dynaliteCliPath, dynaliteVersion, startDynalite } from './dynalite.mjs'
export {
  buildFerretdb,
  FERRETDB_VERSION,
  ferretdbArgs,
  ferretdbBinaryPath,
  startFerretdb,
} from './ferretdb.mjs'
export { GENUINE_SERVERS, genuineServers, mongoServer, notSetReason } from './genuine-servers.mjs'
