import { e2eSuite } from './e2e/suite.js'

e2eSuite('sqlite')
