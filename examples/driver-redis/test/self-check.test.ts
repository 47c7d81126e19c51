import { selfCheck } from '@worklease/testkit'
import { describe, test } from 'vitest'
import { redisFactory } from './redis-harness.js'

// Before trusting a green run, make sure the harness really puts the driver under the suite: the
// same harness, with the driver broken on purpose in each of the testkit's ways, must fail.
selfCheck({ name: 'redis', describe, test, factory: redisFactory })
