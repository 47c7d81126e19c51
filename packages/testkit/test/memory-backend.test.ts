import { afterAll, describe, test } from 'vitest'
import { backendSuite } from '../src/index.js'
import { memoryFactory } from './memory-harness.js'

backendSuite({ name: 'memory', describe, test, afterAll, factory: memoryFactory })
