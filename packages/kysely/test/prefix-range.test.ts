import { describe, expect, test } from 'vitest'
import { prefixUpperBound } from '../src/prefix-range.js'

describe('prefixUpperBound', () => {
  test.each([
    ['job-', 'job.'],
    ['a', 'b'],
    ['é', 'ê'],
    ['\uD7FF', '\uE000'], // past the surrogates
    ['x\u{10FFFF}', 'y'], // carry
    ['😀', '😁'],
  ])('%j -> %j', (prefix, bound) => expect(prefixUpperBound(prefix)).toBe(bound))

  test('nothing bounds a prefix of U+10FFFF only', () => {
    expect(prefixUpperBound('\u{10FFFF}\u{10FFFF}')).toBeUndefined()
  })

  test('every string that starts with the prefix sorts below the bound, by UTF-8 bytes', () => {
    const bytes = (s: string) => Buffer.from(s, 'utf8')
    for (const prefix of ['a', 'job-1', '日本', '\uFFFF', 'z\u{10FFFF}']) {
      const bound = bytes(prefixUpperBound(prefix)!)
      for (const tail of ['', '\u0001', '\uFFFF', '\u{10FFFF}\u{10FFFF}']) {
        expect(Buffer.compare(bytes(prefix + tail), bound)).toBe(-1)
      }
    }
  })
})
