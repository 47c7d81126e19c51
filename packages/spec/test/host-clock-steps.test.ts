import { describe, expect, test } from 'vitest'
import { againAfterHostClockStep, HostClockSteps, wallClockLead } from '../src/host-clock-steps.js'

// A wall clock under test control, `lead` ms ahead of the monotonic clock, and a case that steps it by
// `step` on every run and fails on its first `failures` runs.
const setup = (step: number, failures: number) => {
  const clock = { lead: 0 }
  const watch = () => new HostClockSteps({ everyMs: 1_000_000, read: () => clock.lead })
  const attempts = { count: 0 }
  const attempt = async () => {
    attempts.count++
    clock.lead += step
    if (attempts.count <= failures) throw new Error(`lost ${attempts.count}`)
  }
  return { watch, attempts, attempt }
}

describe('a case the host clock stepped under', () => {
  test('fails, with a step: run once more, and said why', async () => {
    const { watch, attempts, attempt } = setup(1_077, 1)
    const warnings: string[] = []
    await againAfterHostClockStep('suite', 'the case', attempt, watch, (message) => warnings.push(message))
    expect(attempts.count).toBe(2)
    expect(warnings).toEqual([
      expect.stringContaining('suite: the host\'s wall clock stepped +1077 ms during "the case"'),
    ])
  })

  test('fails without a step, or a step too small to matter: the failure stands', async () => {
    for (const step of [0, 40, -60]) {
      const { watch, attempts, attempt } = setup(step, 2)
      const run = againAfterHostClockStep('suite', 'the case', attempt, watch, () =>
        expect.fail('no warning'),
      )
      await expect(run).rejects.toThrow('lost 1')
      expect(attempts.count).toBe(1)
    }
  })

  test('fails again on the second run: that failure stands', async () => {
    const { watch, attempts, attempt } = setup(-500, 2)
    const run = againAfterHostClockStep('suite', 'the case', attempt, watch, () => undefined)
    await expect(run).rejects.toThrow('lost 2')
    expect(attempts.count).toBe(2)
  })

  test('passes: no second run, whatever the clock did', async () => {
    const { watch, attempts, attempt } = setup(5_000, 0)
    await againAfterHostClockStep('suite', 'the case', attempt, watch)
    expect(attempts.count).toBe(1)
  })

  test('the two clocks read together agree within a few ms from one read to the next', () => {
    const first = wallClockLead()
    expect(Math.abs(wallClockLead() - first)).toBeLessThan(5)
  })
})
