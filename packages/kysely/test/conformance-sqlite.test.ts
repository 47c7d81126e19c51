import { conformance } from './conformance.js'

// A file database with a connection per simulated process, and :memory:, where every simulated process
// shares the one connection (a :memory: database exists only inside its connection), so the race cases
// there are not cross-connection.
conformance('sqlite-file')
conformance('sqlite-memory')
