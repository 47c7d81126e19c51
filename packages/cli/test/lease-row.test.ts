import type { LeaseListing } from '@worklease/spec'
import pc from 'picocolors'
import { describe, expect, test } from 'vitest'
import { formatDuration, statusOf, toRow } from '../src/lease-row.js'
import { renderTable } from '../src/render-table.js'

const now = new Date('2026-11-30T12:00:00.000Z')
const lease = (changes: Partial<LeaseListing>): LeaseListing => ({
  workId: 'job-1',
  holderId: 'worker-a',
  fencingToken: 9_007_199_254_740_993n,
  expiresAt: new Date(now.getTime() + 1_500),
  released: false,
  free: false,
  checkpointBytes: 2_048,
  ...changes,
})

describe('lease rows', () => {
  test('status decodes released, revoked, expired and held', () => {
    expect(statusOf(lease({}))).toBe('held')
    expect(statusOf(lease({ free: true }))).toBe('expired')
    expect(statusOf(lease({ released: true, free: true }))).toBe('released')
    expect(statusOf(lease({ holderId: '', free: true }))).toBe('revoked')
  })

  test('JSON rows keep tokens exact and expiry on the store clock', () => {
    expect(toRow(lease({}), now)).toEqual({
      workId: 'job-1',
      holderId: 'worker-a',
      fencingToken: '9007199254740993',
      status: 'held',
      free: false,
      released: false,
      expiresAt: '2026-11-30T12:00:01.500Z',
      expiresInMs: 1_500,
      checkpointBytes: 2_048,
      now: '2026-11-30T12:00:00.000Z',
    })
  })

  test.each([
    [999, '999 ms'],
    [1_500, '1.5 s'],
    [-90_000, '-2 min'],
    [7_200_000, '2.0 h'],
  ])('formatDuration(%d) = %s', (ms, text) => expect(formatDuration(ms)).toBe(text))

  test('the table escapes control characters in ids, so a hostile id cannot redraw the terminal', () => {
    const [header, line] = renderTable(
      [toRow(lease({ workId: 'evil\u001b[2J\nline' }), now)],
      pc.createColors(false),
    )
    expect(header).toMatch(/^WORK ID\s+STATUS\s+HOLDER\s+TOKEN\s+EXPIRES IN\s+CHECKPOINT$/)
    expect(line).toContain('evil\\x1b[2J\\x0aline')
    expect(line).not.toContain('\u001b')
  })
})
