import { conformance } from './conformance.js'

// PostgreSQL 18 from scripts/servers.sh (POSTGRES18_URL).
conformance('postgres18')
