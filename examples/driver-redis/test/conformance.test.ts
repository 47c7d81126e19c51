import { leaserSuite, poolSuite } from '@worklease/core/testing'
import { backendSuite } from '@worklease/testkit'
import { afterAll, describe, test } from 'vitest'
import { redisFactory } from './redis-harness.js'

// The whole conformance suite, as any third-party driver would run it: capabilities.clock is
// 'server', so the expiry cases wait out real short ttls on Redis's clock and the skew cases skip.
backendSuite({ name: 'redis', describe, test, afterAll, factory: redisFactory })

// The runner over the real server: renewal, waiting, handoff and loss with real (short) ttls.
leaserSuite({ name: 'redis', describe, test, factory: redisFactory, ttlMs: 1_500 })

// LeasePool over the real server: membership by listing (the list index is on by default on a single
// Redis), shares, handoffs, crashes.
poolSuite({ name: 'redis', describe, test, factory: redisFactory, ttlMs: 1_500 })
