export { type LeaserSuiteHarness, type LeaserSuiteOptions, leaserSuite } from './leaser-suite.js'
export { type PoolSuiteOptions, poolSuite } from './pool-suite.js'
