import { describe, expect, test } from 'vitest'
import { batchRenewalTargets, outDirOf, parseOptions } from '../src/options.js'

describe('parseOptions', () => {
  test('a flag that takes a value refuses to go without one', () => {
    expect(() => parseOptions(['--quick', '--out'])).toThrow(/^--out needs a value/)
    expect(() => parseOptions(['--out='])).toThrow(/^--out needs a value/)
    expect(() => parseOptions(['--backends'])).toThrow(/^--backends needs a value/)
  })

  test('a flag that takes a value does not take the next flag as its value', () => {
    expect(() => parseOptions(['--out', '--quick'])).toThrow(/^--out needs a value, got --quick/)
    expect(() => parseOptions(['--pool-ttl', '--quick'])).toThrow(/^--pool-ttl needs a value, got --quick/)
  })

  test('--flag=value splits at the first "=" only', () => {
    expect(parseOptions(['--out=/tmp/run=1']).outDir).toBe('/tmp/run=1')
    expect(parseOptions(['--out', '/tmp/run=1']).outDir).toBe('/tmp/run=1')
    expect(parseOptions(['--backends=memory,sqlite']).backends).toEqual(['memory', 'sqlite'])
  })

  test('a boolean flag refuses an inline value', () => {
    expect(() => parseOptions(['--quick=no'])).toThrow(/^--quick takes no value, got --quick=no/)
    expect(() => parseOptions(['--quick=yes'])).toThrow(/^--quick takes no value/)
    expect(parseOptions(['--quick']).quick).toBe(true)
  })

  test('unknown flags and names are refused', () => {
    expect(() => parseOptions(['--quik'])).toThrow(/unknown argument --quik/)
    expect(() => parseOptions(['--backends', 'oracle'])).toThrow(/unknown oracle/)
  })

  test('--quick without --pool: pool sqlite only', () => {
    expect(parseOptions(['--quick']).pool).toEqual(['sqlite'])
  })
})

describe('batchRenewalTargets', () => {
  const targets = (argv: string[]) => batchRenewalTargets(parseOptions(argv))

  test('--quick leaves PostgreSQL 18 out unless --batch-renewal is given', () => {
    expect(targets(['--quick'])).toEqual(['postgres', 'ferretdb', 'dynamodb'])
    // --batch-renewal-leases is not --batch-renewal.
    expect(targets(['--quick', '--batch-renewal-leases', '5'])).toEqual(['postgres', 'ferretdb', 'dynamodb'])
    expect(targets(['--quick', '--batch-renewal-leases=5'])).toEqual(['postgres', 'ferretdb', 'dynamodb'])
  })

  test('--batch-renewal decides when given, and a full run takes all of them', () => {
    expect(targets(['--quick', '--batch-renewal', 'postgres18'])).toEqual(['postgres18'])
    expect(targets(['--quick', '--batch-renewal=all'])).toEqual([
      'postgres',
      'postgres18',
      'ferretdb',
      'dynamodb',
    ])
    expect(targets(['--quick', '--batch-renewal', 'postgres,ferretdb'])).toEqual(['postgres', 'ferretdb'])
    expect(targets([])).toEqual(['postgres', 'postgres18', 'ferretdb', 'dynamodb'])
    expect(targets(['--batch-renewal-leases', '5'])).toEqual([
      'postgres',
      'postgres18',
      'ferretdb',
      'dynamodb',
    ])
  })
})

describe('outDirOf', () => {
  test('--out is relative to where pnpm was run (INIT_CWD), not bench/', () => {
    const options = parseOptions(['--out', 'tmp/run'])
    expect(outDirOf(options, { INIT_CWD: '/work/main' }, '/work/main/bench')).toBe('/work/main/tmp/run')
    expect(outDirOf(parseOptions(['--out', '/abs']), { INIT_CWD: '/x' }, '/y')).toBe('/abs')
  })

  test('without INIT_CWD (run directly, not through pnpm) it is relative to the working directory', () => {
    expect(outDirOf(parseOptions(['--out', 'r']), {}, '/work/main/bench')).toBe('/work/main/bench/r')
  })

  test('without --out: undefined (main.ts writes bench/results)', () => {
    expect(outDirOf(parseOptions([]), { INIT_CWD: '/x' }, '/y')).toBeUndefined()
  })
})
