export { type LeaserSuiteHarness, type LeaserSuiteOptions, leaserSuite } from './leaser-suite.js'
