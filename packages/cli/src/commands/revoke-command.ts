import { createInterface } from 'node:readline/promises'
import type { Backend } from '@worklease/spec'
import { Command } from 'commander'
import { CliError } from '../cli-error.js'
import { ExitCode } from '../exit-code.js'
import { findLease } from '../find-lease.js'
import { type Io, writeLine } from '../io.js'
import { statusOf } from '../lease-row.js'
import { addStoreOptions, type StoreOptions, withStore } from '../store-options.js'

interface RevokeOptions extends StoreOptions {
  yes?: boolean
  json?: boolean
}

function revokeOf(backend: Backend): (workId: string) => Promise<boolean> {
  if (!backend.capabilities.revoke || typeof backend.revoke !== 'function') {
    throw new CliError(
      'this store\'s driver cannot revoke leases (no "revoke" capability)',
      ExitCode.UNSUPPORTED,
    )
  }
  return backend.revoke.bind(backend)
}

async function confirm(io: Io, question: string): Promise<boolean> {
  if (!io.stdin.isTTY) {
    throw new CliError(
      'refusing to revoke without --yes: standard input is not a terminal to ask on',
      ExitCode.USAGE,
    )
  }
  const prompt = createInterface({ input: io.stdin, output: io.stderr })
  try {
    return /^y(es)?$/i.test((await prompt.question(`${question} [y/N] `)).trim())
  } finally {
    prompt.close()
  }
}

export function revokeCommand(io: Io): Command {
  return addStoreOptions(new Command('revoke'))
    .description(
      "end a wedged holder's lease: its record is refused (FENCED) from now on, and the next holder " +
        'gets the next token with an unclean handoff; exits 3 if the lease was not live',
    )
    .argument('<workId>', 'the unit of work')
    .option('-y, --yes', 'do not ask for confirmation')
    .option('--json', 'print {"workId","revoked","previous"} as JSON')
    .action(async (workId: string, options: RevokeOptions) => {
      await withStore(options, io, async ({ backend, label }) => {
        const revoke = revokeOf(backend)
        const { lease } = await findLease(backend, workId)
        if (!options.yes) {
          const holder =
            lease && statusOf(lease) === 'held'
              ? ` held by ${JSON.stringify(lease.holderId)} (token ${lease.fencingToken})`
              : ''
          if (!(await confirm(io, `Revoke the lease on ${JSON.stringify(workId)}${holder} in ${label}?`))) {
            throw new CliError('not revoked', ExitCode.DECLINED)
          }
        }
        const revoked = await revoke(workId)
        if (options.json) {
          const previous = lease
            ? { holderId: lease.holderId, fencingToken: String(lease.fencingToken) }
            : null
          writeLine(io.stdout, JSON.stringify({ workId, revoked, previous }))
        } else if (revoked) {
          writeLine(io.stdout, `revoked ${JSON.stringify(workId)}; the next holder gets an unclean handoff`)
        }
        if (!revoked)
          throw new CliError(`${JSON.stringify(workId)} was not held: nothing revoked`, ExitCode.NOT_FOUND)
      })
    })
}
