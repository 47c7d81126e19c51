import { createInterface } from 'node:readline/promises'
import type { Backend, LeaseListing, RevokeOptions } from '@worklease/spec'
import { Command } from 'commander'
import { UNKNOWN_OUTCOME } from '../bounded-store-calls.js'
import { CliError } from '../cli-error.js'
import { isConnectionFailure } from '../connection-failure.js'
import { ExitCode } from '../exit-code.js'
import { findLease } from '../find-lease.js'
import { idArgument } from '../id-argument.js'
import { type Interrupted, whileInterruptible } from '../interrupt.js'
import { type Io, writeLine } from '../io.js'
import { jsonLine, quoted, statusOf, storeMessage } from '../lease-row.js'
import { addStoreOptions, type StoreOptions, withStore } from '../store-options.js'

interface RevokeCommandOptions extends StoreOptions {
  yes?: boolean
  json?: boolean
}

function revokeOf(backend: Backend): (workId: string, options: RevokeOptions) => Promise<boolean> {
  if (!backend.capabilities.revoke || typeof backend.revoke !== 'function') {
    throw new CliError(
      'this store\'s driver cannot revoke leases (no "revoke" capability)',
      ExitCode.UNSUPPORTED,
    )
  }
  return backend.revoke.bind(backend)
}

/** Without `--yes`, the question needs a terminal: checked before the store is opened. */
function checkCanAsk(io: Io, options: RevokeCommandOptions): void {
  if (options.yes || io.stdin.isTTY) return
  throw new CliError(
    'refusing to revoke without --yes: standard input is not a terminal to ask on',
    ExitCode.USAGE,
  )
}

async function confirm(io: Io, question: string): Promise<boolean> {
  // readline reads Ctrl-C as a key only when its output (stderr) is a terminal; with stderr sent
  // elsewhere (`2>file`) the terminal turns it into SIGINT, which ended the process (exit 130)
  // instead of answering no.
  return whileInterruptible(['SIGINT'], async (interrupted) => {
    const prompt = createInterface({ input: io.stdin, output: io.stderr })
    try {
      const answer = await prompt.question(`${question} [y/N] `, { signal: interrupted })
      return /^y(es)?$/i.test(answer.trim())
    } catch {
      // Ctrl-D or Ctrl-C rejects the question ("Aborted with Ctrl+D"): the operator said no, and the
      // answer line they never finished needs ending before the message (readline ends it itself
      // when the question is aborted).
      if (!interrupted.aborted) writeLine(io.stderr)
      return false
    } finally {
      prompt.close()
    }
  })
}

/** One tenure of a lease: a holder under a token. No two acquires share a token. */
const sameTenure = (a: LeaseListing | undefined, b: LeaseListing | undefined) =>
  a?.holderId === b?.holderId && a?.fencingToken === b?.fencingToken

/** The lease as the question and its refusal name it. */
function describeLease(lease: LeaseListing | undefined): string {
  if (!lease) return 'no lease'
  const tenure = `${quoted(lease.holderId)} (token ${lease.fencingToken})`
  switch (statusOf(lease)) {
    case 'held':
      return `held by ${tenure}`
    case 'expired':
      return `expired, last held by ${tenure}`
    case 'released':
      return `released by ${tenure}`
    case 'revoked':
      return `revoked (token ${lease.fencingToken})`
  }
}

/**
 * Sends the revoke and waits for the store's answer. Ctrl-C or SIGTERM meanwhile ended the process at
 * once (exit 130) with nothing printed, and the revoke still landed once the store got to it (a row
 * another session held locked). The outcome is then unknown, as for a revoke given up after its 10 s
 * bound, and said the same way, with the same exit code (1).
 */
function sendRevoke(
  io: Io,
  revoke: (workId: string, options: RevokeOptions) => Promise<boolean>,
  workId: string,
  fencingToken: bigint,
): Promise<boolean> {
  return whileInterruptible(['SIGINT', 'SIGTERM'], async (interrupted) => {
    try {
      return await revoke(workId, { fencingToken, signal: interrupted })
    } catch (error) {
      if (interrupted.aborted && error === interrupted.reason) {
        // A terminal echoes Ctrl-C as ^C where the cursor is, and ends no line: the message went on
        // after it, on the same line.
        if ((error as Interrupted).signalName === 'SIGINT' && io.stderr.isTTY) writeLine(io.stderr)
        throw new CliError(
          `${(error as Error).message} before the store answered: ${UNKNOWN_OUTCOME}`,
          ExitCode.STORE_FAILED,
          { cause: error },
        )
      }
      // A connection lost once the revoke may be out (before its reply): "the store failed" alone
      // reads as nothing decided, and the revoke may have landed. Other failures (a permission, a
      // lock wait given up) are the store refusing it, said as such.
      if (!isConnectionFailure(error)) throw error
      throw new CliError(
        `the store failed: ${storeMessage(error)}: ${UNKNOWN_OUTCOME}`,
        ExitCode.STORE_FAILED,
        { cause: error },
      )
    }
  })
}

export function revokeCommand(io: Io): Command {
  return addStoreOptions(new Command('revoke'))
    .description(
      "end a wedged holder's lease: its record is refused (FENCED) from now on, and the next holder " +
        'gets the next token with an unclean handoff; exits 3 if the lease was not live',
    )
    .argument('<workId>', 'the unit of work', idArgument('workId'))
    .option('-y, --yes', 'do not ask for confirmation')
    .option('--json', 'print {"workId","revoked","previous"} as JSON')
    .action(async (workId: string, options: RevokeCommandOptions) => {
      checkCanAsk(io, options)
      await withStore(options, io, async ({ backend, where }) => {
        const revoke = revokeOf(backend)
        let { lease } = await findLease(backend, workId)
        // With --json every outcome prints its object, a declined one too: a script reads stdout.
        const printJson = (revoked: boolean) => {
          if (!options.json) return
          const previous = lease
            ? { holderId: lease.holderId, fencingToken: String(lease.fencingToken) }
            : null
          writeLine(io.stdout, jsonLine({ workId, revoked, previous }))
        }
        if (!options.yes) {
          const asked = lease
          const holder = asked && statusOf(asked) === 'held' ? ` ${describeLease(asked)}` : ''
          if (!(await confirm(io, `Revoke the lease on ${quoted(workId)}${holder} in ${where}?`))) {
            printJson(false)
            throw new CliError('not revoked', ExitCode.DECLINED)
          }
          // The answer can come minutes later, when another holder may have the lease: the "y"
          // covers only the holder and token the question named.
          ;({ lease } = await findLease(backend, workId))
          if (!sameTenure(asked, lease)) {
            printJson(false)
            throw new CliError(
              `not revoked: ${quoted(workId)} changed while the question was asked: it is now ` +
                `${describeLease(lease)}, not ${describeLease(asked)}`,
              ExitCode.DECLINED,
            )
          }
        }
        // Only the tenure read (and asked about): its token is part of the revoke's one conditional
        // write, so a holder that takes over after this read is never the one ended. A lease that
        // was not held has no tenure to end: nothing is sent, whoever may have taken it since.
        const tenure = lease && statusOf(lease) === 'held' ? lease : undefined
        const revoked = tenure ? await sendRevoke(io, revoke, workId, tenure.fencingToken) : false
        printJson(revoked)
        if (revoked && !options.json) {
          writeLine(io.stdout, `revoked ${quoted(workId)}; the next holder gets an unclean handoff`)
        }
        if (!revoked && tenure) {
          // The tenure ended before the revoke landed: say what the lease is now (a read for the
          // message only: nothing was written).
          const now = await findLease(backend, workId).then(
            (found) => found.lease,
            () => undefined,
          )
          if (now && statusOf(now) === 'held' && !sameTenure(tenure, now)) {
            throw new CliError(
              `not revoked: ${quoted(workId)} changed before the revoke reached the store: it is now ` +
                `${describeLease(now)}, not ${describeLease(tenure)}`,
              ExitCode.DECLINED,
            )
          }
        }
        if (!revoked)
          throw new CliError(`${quoted(workId)} was not held: nothing revoked`, ExitCode.NOT_FOUND)
      })
    })
}
