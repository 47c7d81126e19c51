export type { BackendFactory, BackendHarness, OpenOptions } from './backend-harness.js'
