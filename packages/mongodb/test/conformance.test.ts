import { leaserSuite, poolSuite } from '@worklease/core/testing'
import { backendSuite } from '@worklease/testkit'
import { afterAll, describe, test } from 'vitest'
import { ferretdbVersion, mongoFactory } from './mongo-harness.js'

backendSuite({
  name: ferretdbVersion ? `mongodb (FerretDB ${ferretdbVersion})` : 'mongodb',
  describe,
  test,
  afterAll,
  factory: mongoFactory,
})

// The runner over the real server: renewal, waiting, handoff and loss with real (short) ttls.
leaserSuite({
  name: ferretdbVersion ? `mongodb (FerretDB ${ferretdbVersion})` : 'mongodb',
  describe,
  test,
  factory: mongoFactory,
  ttlMs: 1_500,
})

// LeasePool over the real server: membership by listing, shares, handoffs, crashes.
poolSuite({
  name: ferretdbVersion ? `mongodb (FerretDB ${ferretdbVersion})` : 'mongodb',
  describe,
  test,
  factory: mongoFactory,
  ttlMs: 1_500,
})
