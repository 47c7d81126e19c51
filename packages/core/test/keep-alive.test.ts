import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { MemoryBackend } from '@worklease/memory'
import { describe, expect, test, vi } from 'vitest'
import { Leaser } from '../src/index.js'

const fixture = fileURLToPath(new URL('./fixtures/pending-work.mjs', import.meta.url))
const failedPoolStart = fileURLToPath(new URL('./fixtures/failed-pool-start.mjs', import.meta.url))

// Runs the built package in a child process: only a real event loop can tell whether a pending
// wait keeps the process alive.
function runFixture(mode: 'wait' | 'retry' | 'after-fake-timers') {
  const child = spawnSync(process.execPath, [fixture, mode], { encoding: 'utf8', timeout: 10_000 })
  return { status: child.status, stdout: child.stdout, stderr: child.stderr }
}

describe('pending work keeps the process alive', () => {
  test('a run waiting for a held lease (wait: true) does its work before the process exits', () => {
    const result = runFixture('wait')
    expect(result.stderr).toBe('')
    expect(result.stdout).toBe('did the work\n')
    expect(result.status).toBe(0)
  })

  test('a wait keeps the process alive also after a lease cycle ran under fake timers', () => {
    const result = runFixture('after-fake-timers')
    expect(result.stderr).toBe('')
    expect(result.stdout).toBe('did the work\n')
    expect(result.status).toBe(0)
  })

  test('a lease cycle under fake timers leaves no timer of ours in the fake clock', async () => {
    vi.useFakeTimers()
    try {
      const leaser = new Leaser({ backend: new MemoryBackend(), ttlMs: 1_000 })
      await leaser.run('job', () => undefined)
      await leaser.close()
      expect(vi.getTimerCount()).toBe(0)
    } finally {
      vi.useRealTimers()
    }
  })

  test('a run retrying after transient store errors does its work before the process exits', () => {
    const result = runFixture('retry')
    expect(result.stderr).toBe('')
    expect(result.stdout).toBe('did the work\n')
    expect(result.status).toBe(0)
  })

  test('a pool whose start failed lets the process exit', () => {
    const child = spawnSync(process.execPath, [failedPoolStart], { encoding: 'utf8', timeout: 10_000 })
    expect(child.stderr).toBe('')
    expect(child.stdout).toBe('start failed: connection refused\n')
    expect(child.status).toBe(0)
  })
})
