import { afterEach, describe, expect, test, vi } from 'vitest'
import { bindCase, type CaseDefinition } from '../src/index.js'
import { memoryFactory } from './memory-harness.js'

// A server-clock store ends every lease early when the host's wall clock steps ahead. Here the step
// is made by moving Date.now() against performance.now(), during the case's first run only.
function steppingCase(stepMs: number, failures: number) {
  const runs = { count: 0, harnesses: new Set<unknown>() }
  const definition: CaseDefinition = {
    name: 'a lease lasts its ttl',
    async run(context) {
      runs.count++
      runs.harnesses.add(context)
      if (runs.count === 1) {
        const now = Date.now.bind(Date)
        vi.spyOn(Date, 'now').mockImplementation(() => now() + stepMs)
        await new Promise((resolve) => setTimeout(resolve, 120))
      }
      if (runs.count <= failures) throw new Error(`lease lost early, run ${runs.count}`)
    },
  }
  return { runs, definition }
}

describe('a conformance case the host wall clock stepped under', () => {
  afterEach(() => vi.restoreAllMocks())

  test('runs once more, on a fresh harness, and says why', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined)
    const { runs, definition } = steppingCase(1_500, 1)
    const outcome = await bindCase('expiry', definition, memoryFactory).run()
    expect(outcome).toEqual({ status: 'passed' })
    expect(runs.count).toBe(2)
    expect(runs.harnesses.size).toBe(2)
    expect(warn).toHaveBeenCalledOnce()
    const [message] = warn.mock.calls[0]!
    // The two clocks are read a few µs apart, on a loaded machine up to a ms or two: the step reads
    // as 1500 give or take that.
    const said =
      /^worklease testkit: the host's wall clock stepped \+(\d+) ms during "expiry > a lease lasts its ttl"/.exec(
        String(message),
      )
    expect(said).not.toBeNull()
    expect(Math.abs(Number(said![1]) - 1_500)).toBeLessThanOrEqual(20)
  })

  test('fails for good without a step, with a small one, or when it fails again', async () => {
    vi.spyOn(console, 'warn').mockImplementation(() => undefined)
    for (const [stepMs, failures, lost] of [
      [0, 2, 'run 1'],
      [40, 2, 'run 1'],
      [1_500, 2, 'run 2'],
    ] as const) {
      const { definition } = steppingCase(stepMs, failures)
      await expect(bindCase('expiry', definition, memoryFactory).run()).rejects.toThrow(lost)
      vi.mocked(Date.now).mockRestore()
    }
  })
})
