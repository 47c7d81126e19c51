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
