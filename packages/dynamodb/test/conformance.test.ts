import { backendSuite } from '@worklease/testkit'
import { afterAll, describe, test } from 'vitest'
import { dynamoFactory } from './dynamo-harness.js'

// Every case gets its own table (instant on dynalite); each open() is its own DynamoDBClient and clock.
backendSuite({ name: 'dynamodb', describe, test, afterAll, factory: dynamoFactory })
