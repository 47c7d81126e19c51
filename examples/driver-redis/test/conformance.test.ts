import { backendSuite } from '@worklease/testkit'
import { afterAll, describe, test } from 'vitest'
import { redisFactory } from './redis-harness.js'

// The whole conformance suite, as any third-party driver would run it: capabilities.clock is
// 'server', so the expiry cases wait out real short ttls on Redis's clock and the skew cases skip.
backendSuite({ name: 'redis', describe, test, afterAll, factory: redisFactory })
