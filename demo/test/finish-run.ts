/**
 * The smallest run the coordinators' finish tests drive: two workers, one item of two steps, a short
 * ttl; the stores are never opened (the workers are fakes).
 */
export const FINISH_RUN_ARGS = [
  '--workers',
  '2',
  '--items',
  '1',
  '--steps',
  '2',
  '--ttl',
  '100',
  '--step-ms',
  '20',
]

export const FINISH_RUN = {
  spec: {
    backend: 'sqlite',
    leaseTable: 'l',
    outputTable: 'o',
    downstream: { family: 'sqlite', file: ':memory:' },
  },
  items: ['item-01'],
  onLine: () => undefined,
} as const
