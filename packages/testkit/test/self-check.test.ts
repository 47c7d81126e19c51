import { describe, test } from 'vitest'
import { selfCheck } from '../src/index.js'
import { memoryFactory } from './memory-harness.js'

// The mutants a third party's driver is checked with are caught on the reference backend too.
selfCheck({ name: 'memory', describe, test, factory: memoryFactory })
