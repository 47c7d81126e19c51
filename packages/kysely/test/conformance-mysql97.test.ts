import { conformance } from './conformance.js'

// Oracle MySQL 9.7 from scripts/servers.sh (MYSQL97_URL): acquire without RETURNING, two statements.
conformance('mysql97')
