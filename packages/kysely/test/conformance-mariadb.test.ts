import { conformance } from './conformance.js'

conformance('mariadb')
