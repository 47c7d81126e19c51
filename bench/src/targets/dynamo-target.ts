import { randomUUID } from 'node:crypto'
import { Agent } from 'node:http'
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { createLeaseTable, DynamoBackend } from '@worklease/dynamodb'
import { dynaliteVersion, startDynalite } from '@worklease/test-servers'
import type { Session, Target } from '../target.js'
import { dynamoBaseline } from './dynamo-baseline.js'
import { dynamoRequestShape } from './dynamo-request-shape.js'
import { SentTexts } from './sent-texts.js'

/**
 * dynalite in a child process on 127.0.0.1 (in memory), or the endpoint in `DYNAMODB_ENDPOINT`.
 * dynalite ignores `ReturnValuesOnConditionCheckFailure`, so the backend is told not to ask for it.
 */
export async function openDynamoTarget(): Promise<Target> {
  const external = process.env.DYNAMODB_ENDPOINT
  const server = external ? undefined : await startDynalite({ in: 'child' })
  const endpoint = external ?? server!.endpoint
  const dummy = !external || !process.env.AWS_ACCESS_KEY_ID
  const newClient = (maxSockets: number) =>
    new DynamoDBClient({
      endpoint,
      region: process.env.AWS_REGION ?? 'us-east-1',
      ...(dummy ? { credentials: { accessKeyId: 'worklease', secretAccessKey: 'worklease' } } : {}),
      requestHandler: { httpAgent: new Agent({ keepAlive: true, maxSockets }) },
    })
  const admin = newClient(1)
  const tables = { worklease: `bench-worklease-${randomUUID()}`, baseline: `bench-baseline-${randomUUID()}` }
  for (const tableName of Object.values(tables)) await createLeaseTable(admin, { table: tableName })
  return {
    name: 'dynalite',
    server: external ? `DynamoDB API at ${external}` : `dynalite ${dynaliteVersion()}`,
    origin: external ? 'DYNAMODB_ENDPOINT' : 'child process on 127.0.0.1',
    url: endpoint,
    notes: ['AWS SDK v3 DynamoDBClient, keep-alive http agent'],
    async open(poolSize): Promise<Session> {
      const client = newClient(poolSize)
      let requests = 0
      client.middlewareStack.add(
        (next) => (args) => {
          requests++
          return next(args)
        },
        { step: 'finalizeRequest', priority: 'low', name: 'worklease-bench-request-count' },
      )
      // Every 4th request of a side is described: a walk over each would tax the cells it watches.
      const sent = new SentTexts(4)
      client.middlewareStack.add(
        (next, context) => (args) => {
          const input = args.input as Record<string, unknown>
          const table = input.TableName
          const side =
            table === tables.worklease ? 'worklease' : table === tables.baseline ? 'baseline' : undefined
          if (side) sent.record(side, () => dynamoRequestShape(context.commandName ?? '?', input))
          return next(args)
        },
        { step: 'initialize', name: 'worklease-bench-request-shape' },
      )
      return {
        backend: new DynamoBackend({
          client,
          table: tables.worklease,
          returnValuesOnConditionCheckFailure: Boolean(external),
          renewMany: Boolean(external),
        }),
        baseline: dynamoBaseline(client, tables.baseline),
        roundTrips: () => requests,
        recordStatements: () => sent.start(),
        close: async () => client.destroy(),
      }
    },
    async close() {
      for (const TableName of Object.values(tables)) {
        await admin.send(new DeleteTableCommand({ TableName })).catch(() => undefined)
      }
      admin.destroy()
      server?.stop()
    },
  }
}
