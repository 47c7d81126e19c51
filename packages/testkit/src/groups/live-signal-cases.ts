import type { CaseDefinition } from '../suite-case.js'
import { acquireCases } from './acquire-cases.js'
import { acquireWithCheckpointCases } from './acquire-with-checkpoint-cases.js'
import { checkpointCases } from './checkpoint-cases.js'
import { expiryCases } from './expiry-cases.js'
import { handoffCases } from './handoff-cases.js'
import { releaseCases } from './release-cases.js'
import { renewCases } from './renew-cases.js'
import { renewManyCases } from './renew-many-cases.js'
import { roundTripCases } from './round-trip-cases.js'

// Cases that decide an outcome (a token, an expiry, a fence, a handoff) or count round trips, run again
// with a live signal on every call: the Leaser sends one with each, and a driver may take another path
// when it gets one. Named here, so that a renamed case fails loudly rather than dropping out.
const AGAIN: ReadonlyArray<readonly [readonly CaseDefinition[], readonly string[]]> = [
  [
    acquireCases,
    [
      'a new workId gets token 1 and expires at now + ttl',
      'an expired lease can be taken by anyone, with the next token',
      'a released lease can be taken at once, with the next token',
      'LEASE_HELD reports who holds the lease and how long it has left',
    ],
  ],
  [
    renewCases,
    [
      'renew never shortens a live lease: a shorter ttl keeps the later expiry',
      'renew extends to now + ttl when that is later, exactly on a client clock',
      'renew after a takeover is FENCED',
      'renew after release is FENCED',
      'renew with the right token but another holderId is FENCED',
    ],
  ],
  [
    checkpointCases,
    [
      'checkpoint extends the lease like renew',
      'checkpoint never shortens a live lease: a shorter ttl keeps the later expiry',
      'a checkpoint with a lower sequence keeps the later state but still extends the lease',
      'checkpoint after a takeover is FENCED and changes neither the state nor the expiry',
    ],
  ],
  [
    releaseCases,
    [
      'release frees the lease at once',
      'release with a forged token or holderId is FENCED and the lease stays held',
      'release of an expired lease that nobody took succeeds and hands off cleanly',
    ],
  ],
  [
    expiryCases,
    [
      'a lease is held 1 ms before expiresAt and free at expiresAt',
      'renew exactly at expiresAt is LEASE_EXPIRED',
      'a lease with a short real ttl is held, then free once the server clock passes it',
      'renew with a short real ttl after expiry is LEASE_EXPIRED',
      "a shorter ttl keeps a stored expiry later than the record's: renew, renewMany, checkpoint, late checkpoint",
    ],
  ],
  [
    handoffCases,
    [
      'after release the successor reads the state and a clean handoff',
      'after a crash (expiry) the successor reads the state and an unclean handoff',
    ],
  ],
  [
    acquireWithCheckpointCases,
    [
      'after a release it returns the last checkpoint and a clean handoff; the record works',
      'after a crash (expiry) it returns the state kept and an unclean handoff',
    ],
  ],
  [
    renewManyCases,
    [
      'each record gets its own outcome, in input order: held, expired, taken over, released, revoked, forged',
      'renewMany never shortens: a batch with a shorter ttl keeps the later expiry',
      'renewMany extends to now + ttl when that is later, exactly on a client clock',
    ],
  ],
  [roundTripCases, ['every operation is one round trip on its happy path']],
]

export const liveSignalCases: CaseDefinition[] = AGAIN.flatMap(([group, names]) =>
  names.map((name): CaseDefinition => {
    const definition = group.find((candidate) => candidate.name === name)
    if (!definition)
      throw new Error(`worklease testkit: no case named ${JSON.stringify(name)} to run with a signal`)
    return { ...definition, name: `with a live signal: ${name}`, liveSignal: true }
  }),
)
