import { Agent } from 'node:http'
import type { MongoClient } from 'mongodb'

/** A keep-alive HTTP agent that counts the requests sent through it (DynamoDB round trips). */
export function countingAgent(maxSockets: number): { agent: Agent; count(): number } {
  const agent = new Agent({ keepAlive: true, maxSockets })
  let requests = 0
  const add = (agent as unknown as { addRequest: (...args: unknown[]) => void }).addRequest.bind(agent)
  ;(agent as unknown as { addRequest: (...args: unknown[]) => void }).addRequest = (...args) => {
    requests++
    add(...args)
  }
  return { agent, count: () => requests }
}

/** Counts every command an ioredis client writes (scripts, SET, PING, ...). */
export function countRedisCommands(client: { sendCommand: (...args: any[]) => unknown }): () => number {
  let commands = 0
  const send = client.sendCommand.bind(client)
  client.sendCommand = (...args: any[]) => {
    commands++
    return send(...args)
  }
  return () => commands
}

// Sent by the MongoDB driver for its own upkeep, never by a lock operation.
const DRIVER_COMMANDS = new Set([
  'hello',
  'ismaster',
  'isMaster',
  'endSessions',
  'ping',
  'buildInfo',
  'getMore',
])

/** Counts the commands a MongoClient (created with `monitorCommands: true`) sends for its callers. */
export function countMongoCommands(client: MongoClient): () => number {
  let commands = 0
  client.on('commandStarted', (event) => {
    if (!DRIVER_COMMANDS.has(event.commandName)) commands++
  })
  return () => commands
}
