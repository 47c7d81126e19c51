import { afterAll, describe, expect, test } from 'vitest'
import { type GroupName, suiteCases } from '../src/index.js'
import { brokenBackends } from './broken-backends.js'

interface Failure {
  group: GroupName
  line: string
}

const caught = new Map<string, Failure[]>()

describe('the suite catches every deliberately broken backend', () => {
  test('there are at least ten of them', () => {
    expect(brokenBackends.length).toBeGreaterThanOrEqual(10)
  })

  for (const { name, caughtBy, factory } of brokenBackends) {
    test(`catches "${name}" in the ${caughtBy} group`, { timeout: 120_000 }, async () => {
      const failures: Failure[] = []
      for (const c of suiteCases({ factory })) {
        try {
          await c.run()
        } catch (error) {
          const message = error instanceof Error ? error.message.split('\n')[0] : String(error)
          failures.push({ group: c.group, line: `${c.group} > ${c.name}: ${message}` })
        }
      }
      caught.set(name, failures)
      expect(failures.map((f) => f.group)).toContain(caughtBy)
    })
  }
})

afterAll(() => {
  const lines = [...caught].map(([name, failures]) => {
    const groups = [...new Set(failures.map((f) => f.group))].join(', ')
    return `  ${name}: ${failures.length} failing case(s) in ${groups}\n    e.g. ${failures[0]?.line ?? 'NONE'}`
  })
  const total = [...caught.values()].filter((f) => f.length > 0).length
  console.log(
    `[worklease testkit] broken backends caught: ${total}/${brokenBackends.length}\n${lines.join('\n')}`,
  )
})
