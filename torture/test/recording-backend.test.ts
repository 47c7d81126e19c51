import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryBackend } from '@worklease/memory'
import { afterEach, expect, test } from 'vitest'
import { HistoryWriter, loadHistory } from '../src/history.js'
import { RecordingBackend } from '../src/recording-backend.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

test('a store with renewMany is recorded with it: each record a renew of its own, with its outcome', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'worklease-recording-'))
  dirs.push(dir)
  let now = 1_000_000
  const store = new MemoryBackend({ clock: { now: () => now } })
  const history = new HistoryWriter(join(dir, 'p0.jsonl'), 'p0')
  const recording = new RecordingBackend(store, history, () => 0)
  // The Leaser renews in batches only through a backend that has renewMany as a method.
  expect(typeof recording.renewMany).toBe('function')
  const held = await store.acquire('held', 'h', 10_000)
  const taken = await store.acquire('taken', 'h', 1_000)
  const expired = await store.acquire('expired', 'h', 1_000)
  now += 2_000
  await store.acquire('taken', 'other', 10_000)
  expect(await recording.renewMany!([held, taken, expired], 10_000)).toEqual(['renewed', 'fenced', 'expired'])
  history.close()
  const renews = loadHistory(dir).map((op) => [op.op, op.workId, op.token, op.outcome, op.code])
  expect(renews).toEqual([
    ['renew', 'held', 1n, 'ok', null],
    ['renew', 'taken', 1n, 'fail', 'FENCED'],
    ['renew', 'expired', 1n, 'fail', 'LEASE_EXPIRED'],
  ])
})

test('a store without renewMany is recorded without it, so the Leaser renews one lease at a time', () => {
  const dir = mkdtempSync(join(tmpdir(), 'worklease-recording-'))
  dirs.push(dir)
  const store = new MemoryBackend()
  const { renewMany: _, ...capabilities } = store.capabilities
  const single = Object.assign(Object.create(store), { capabilities, renewMany: undefined })
  const recording = new RecordingBackend(single, new HistoryWriter(join(dir, 'p0.jsonl'), 'p0'), () => 0)
  expect(recording.renewMany).toBeUndefined()
})
