import { createLeaseRecord } from '@worklease/spec'
import { describe, expect, test } from 'vitest'
import { RenewalChunks } from '../src/renewal-chunks.js'

const lease = (workId: string, token = 1n) => ({ record: createLeaseRecord(workId, 'h', token, 0) })

function cut(maxRecords: number, mayRepeat: boolean, workIds: string[]): string[][] {
  const sent: string[][] = []
  const chunks = new RenewalChunks(maxRecords, mayRepeat, (chunk) =>
    sent.push(chunk.map((item) => item.record.workId)),
  )
  for (const workId of workIds) chunks.add(lease(workId))
  chunks.flush()
  return sent
}

describe('RenewalChunks', () => {
  test('cuts leases into calls of maxRecords, in the order they came, the last one short', () => {
    expect(cut(2, false, ['a', 'b', 'c', 'd', 'e'])).toEqual([['a', 'b'], ['c', 'd'], ['e']])
    expect(cut(2, true, ['a', 'b', 'c', 'd', 'e'])).toEqual([['a', 'b'], ['c', 'd'], ['e']])
  })

  test('a workId already in the chunk being filled waits for a call after these', () => {
    expect(cut(3, true, ['a', 'a', 'b', 'a', 'c', 'd'])).toEqual([['a', 'b', 'c'], ['d'], ['a'], ['a']])
    // Not a repeat once its chunk went out: the next chunk may hold it.
    expect(cut(2, true, ['a', 'b', 'a'])).toEqual([['a', 'b'], ['a']])
  })

  test('told no workId can repeat, it never looks', () => {
    expect(cut(3, false, ['a', 'a', 'b'])).toEqual([['a', 'a', 'b']])
  })

  test('sends nothing for no leases', () => {
    expect(cut(3, true, [])).toEqual([])
  })
})
