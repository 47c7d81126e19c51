import { leaserSuite, poolSuite } from '@worklease/core/testing'
import { backendSuite } from '@worklease/testkit'
import { afterAll, describe, test } from 'vitest'
import { dynamoFactory } from './dynamo-harness.js'

// Every case gets its own table (instant on dynalite); each open() is its own DynamoDBClient and clock.
backendSuite({ name: 'dynamodb', describe, test, afterAll, factory: dynamoFactory })

// The runner over the real server: renewal, waiting, handoff and loss with real (short) ttls.
leaserSuite({ name: 'dynamodb', describe, test, factory: dynamoFactory, ttlMs: 1_500 })

// LeasePool over the real server: membership by listing, shares, handoffs, crashes. Every test table
// has the list index (TEST_LIST_INDEX), so capabilities.list is true.
poolSuite({ name: 'dynamodb', describe, test, factory: dynamoFactory, ttlMs: 1_500 })
