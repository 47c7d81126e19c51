import { readFileSync } from 'node:fs'
import { describe, expect, test } from 'vitest'
import { renderMarkdown } from '../src/report.js'
import type { BenchResults } from '../src/results.js'

// The batch-renewal rows of a `pnpm bench --quick` made before --quick renewed inside its window:
// every child counted 0 renewals, so each per-renewal figure is NaN, stored by JSON as null.
const noRenewals = JSON.parse(
  readFileSync(new URL('./fixtures/quick-batch-renewal-no-renewals.json', import.meta.url), 'utf8'),
) as BenchResults

describe('report', () => {
  test('a batch-renewal row with no renewal in its window says so, never null', () => {
    const rows = renderMarkdown(noRenewals)
      .split('\n')
      .filter((line) => / \| (batched|per lease) \| /.test(line))
    expect(rows).toHaveLength(6)
    for (const row of rows) {
      const cells = row.split('|').map((cell) => cell.trim())
      expect(cells).not.toContain('null')
      expect(cells).toContain('n/a: no renewal in the window ⚠')
    }
  })
})

describe('why a MongoDB peer is ahead', () => {
  // Only the server's label picks the text; a section with no sides prints it all the same.
  const whyLines = (server: string) =>
    renderMarkdown({ ...noRenewals, peers: [{ store: 'ferretdb', server, sides: [] }] })
      .split('\n')
      .filter((line) => line.startsWith('Why: '))

  test.each([
    ['FerretDB 2 (MongoDB wire 7.0.77; no genuine mongod on this machine)'],
    ['FerretDB v2.7.0 (MongoDB wire 7.0.77)'],
  ])('on %s: what FerretDB 2.7 was timed at, not the 1.x text', (server) => {
    const [why, ...more] = whyLines(server)
    expect(more).toEqual([])
    expect(why).toMatch(/FerretDB 2\.7/)
    expect(why).not.toMatch(/SQLite/)
  })

  test('on FerretDB 1.x: its SQLite handler', () => {
    expect(whyLines('FerretDB v1.24.2 (MongoDB wire 7.0.42)')).toEqual([
      expect.stringMatching(/SQLite handler/),
    ])
  })

  test('on a genuine MongoDB: nothing, since no timing of its own was made', () => {
    expect(whyLines('MongoDB 8.0.4')).toEqual([])
  })
})

describe('where a cycle spends its CPU', () => {
  const spreadOf = (median: number) => ({ median, min: median, max: median })
  const side = (label: string) => ({ label, semantics: '', waiting: '', roundTripUnit: 'commands' })
  const cell = (
    cpu: Partial<
      Record<'clientCpuUsPerCycle' | 'serverCpuUsPerCycle' | 'restOfMachineCpuUsPerCycle', number[]>
    >,
  ) => ({
    concurrency: 16,
    cyclesPerSecond: [spreadOf(800), spreadOf(1000), spreadOf(1000)],
    roundTripsPerCycle: [2, 2, 2],
    gcMsPerThousandCycles: [spreadOf(1), spreadOf(1), spreadOf(1)],
    heldAfterRelease: [0, 0, 0],
    ratio: [spreadOf(1), spreadOf(0.8), spreadOf(0.8)],
    driverRatio: [spreadOf(1.25), spreadOf(1), spreadOf(1)],
    ...Object.fromEntries(Object.entries(cpu).map(([key, values]) => [key, values.map(spreadOf)])),
  })
  const render = (cycles: ReturnType<typeof cell>) =>
    renderMarkdown({
      ...noRenewals,
      peers: [
        {
          store: 'redis',
          server: 'Redis 7.0.15',
          sides: [side('worklease Leaser'), side('worklease driver'), side('a peer')],
          cycles: [cycles],
        },
      ],
    }).split('\n')

  test('a table of client, server and rest-of-machine µs per side, and the same beside a peer ahead', () => {
    const lines = render(
      cell({
        clientCpuUsPerCycle: [40, 33, 30],
        serverCpuUsPerCycle: [35, 34, 25],
        restOfMachineCpuUsPerCycle: [2, 1, 3],
      }),
    )
    expect(lines).toContain('| library | c16 client µs | c16 server µs | c16 rest of machine µs |')
    expect(lines).toContain('| worklease Leaser | 40 [40–40] | 35 [35–35] | 2 [2–2] |')
    expect(lines).toContain('| a peer | 30 [30–30] | 25 [25–25] | 3 [3–3] |')
    expect(lines.find((line) => line.startsWith('- **a peer** is ahead'))).toContain(
      'CPU µs a cycle (client + server + rest of machine, medians): Leaser 77, driver 68, peer 58',
    )
  })

  test('a store that reports no CPU of its own: client and rest of machine only', () => {
    const lines = render(
      cell({ clientCpuUsPerCycle: [40, 33, 30], restOfMachineCpuUsPerCycle: [60, 59, 50] }),
    )
    expect(lines).toContain('| library | c16 client µs | c16 rest of machine µs |')
    expect(lines.find((line) => line.startsWith('- **a peer** is ahead'))).toContain(
      'CPU µs a cycle (client + rest of machine, medians): Leaser 100, driver 92, peer 80',
    )
  })

  test('results from before CPU was measured: no table, no CPU beside a peer ahead', () => {
    const lines = render(cell({}))
    expect(lines.some((line) => line.startsWith('| library | c16 client µs'))).toBe(false)
    expect(lines.find((line) => line.startsWith('- **a peer** is ahead'))).not.toContain('CPU µs')
  })
})

// Found by a review (session 49): the prose said 2,000 leases for DynamoDB's per-lease row and "500
// leases (DynamoDB 100)" under --quick, whatever the rows held.
describe('the batch renewal prose states the leases the rows held', () => {
  const quick = JSON.parse(
    readFileSync(new URL('./fixtures/quick-batch-renewal-no-renewals.json', import.meta.url), 'utf8'),
  ) as BenchResults
  const prose = (results: BenchResults) =>
    renderMarkdown(results)
      .split('\n')
      .find((line) => line.startsWith('One process holds N leases'))!

  test("DynamoDB's per-lease row", () => {
    expect(prose(quick)).toContain('its per-lease row holds 100 leases')
  })

  test('--quick with --batch-renewal-leases', () => {
    const custom = structuredClone(quick) as unknown as {
      batchRenewal: Array<{ batched: { leases: number }; single: { leases: number } }>
    }
    for (const row of custom.batchRenewal) {
      row.batched.leases = 50
      row.single.leases = 50
    }
    expect(prose(custom as unknown as BenchResults)).toContain('--quick: 50 leases (DynamoDB 50)')
  })
})

// One run's results: the committed latest.md is what the renderer makes of latest.json, so no section
// of it was edited by hand or left from another run.
test('results/latest.md is renderMarkdown(results/latest.json)', () => {
  const json = JSON.parse(
    readFileSync(new URL('../results/latest.json', import.meta.url), 'utf8'),
  ) as BenchResults
  const md = readFileSync(new URL('../results/latest.md', import.meta.url), 'utf8')
  expect(renderMarkdown(json).trim()).toBe(md.trim())
})
