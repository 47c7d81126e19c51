import { conformance } from './conformance.js'

conformance('postgres')
