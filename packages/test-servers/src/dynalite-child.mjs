// Runs dynalite (DynamoDB's API, in memory) in its own process on 127.0.0.1 and a free port, so the
// server's CPU is not counted against the benchmark's client. Prints the port, exits with its parent.
import dynalite from 'dynalite'

const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${server.address().port}\n`)
})
process.on('disconnect', () => process.exit(0))
