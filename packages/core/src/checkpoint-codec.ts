import { InvalidArgumentError } from '@worklease/spec'

/**
 * Turns checkpoint state into the bytes a backend stores, and back. `encode` must return bytes that
 * `decode` turns into an equal value; both run in the caller's process only.
 *
 * ```ts
 * const codec: CheckpointCodec<number> = {
 *   encode: (page) => new TextEncoder().encode(String(page)),
 *   decode: (bytes) => Number(new TextDecoder().decode(bytes)),
 * }
 * ```
 */
export interface CheckpointCodec<S> {
  encode(state: S): Uint8Array
  decode(bytes: Uint8Array): S
}

/** The default: state is bytes, stored as they are. */
export const bytesCodec: CheckpointCodec<Uint8Array> = Object.freeze({
  encode: (state: Uint8Array) => state,
  decode: (bytes: Uint8Array) => bytes,
})

/**
 * State as JSON (UTF-8), typed by you: what every user otherwise writes with TextEncoder and
 * JSON.stringify. The type is not checked at run time: a checkpoint written by an older version of
 * your code decodes to whatever it held. Values go through `JSON.stringify` as it is (`NaN` becomes
 * `null`, an `undefined` field is left out); a state it cannot encode at all (`undefined`, a function,
 * a symbol, a BigInt, a cycle) is refused with `InvalidArgumentError`, before anything is stored.
 *
 * ```ts
 * const leaser = new Leaser({ backend, ttlMs: 30_000, codec: jsonCodec<{ cursor: string }>() })
 * ```
 */
export function jsonCodec<S>(): CheckpointCodec<S> {
  const encoder = new TextEncoder()
  const decoder = new TextDecoder('utf-8', { fatal: true })
  return Object.freeze({
    encode: (state: S) => encoder.encode(toJson(state)),
    decode: (bytes: Uint8Array) => JSON.parse(decoder.decode(bytes)) as S,
  })
}

/**
 * The JSON text of `state`. `JSON.stringify` gives `undefined` for some values instead of throwing:
 * encoded as is, that is zero bytes, which the store accepts and no later read can decode.
 */
function toJson(state: unknown): string {
  let text: string | undefined
  try {
    text = JSON.stringify(state)
  } catch (error) {
    throw new InvalidArgumentError('state cannot be encoded as JSON', { cause: error })
  }
  if (text === undefined) {
    throw new InvalidArgumentError(`state cannot be encoded as JSON, got ${typeof state}`)
  }
  return text
}

/** What `lease.readCheckpoint()` returns: the decoded state, the stored bytes, and the handoff. */
export interface LeaseCheckpoint<S> {
  /** The last state any holder checkpointed, decoded; `null` if none ever did. */
  readonly state: S | null
  /** The same state as the backend stores it. */
  readonly bytes: Uint8Array | null
  /** `true` if the previous lease ended by release (or there was none); `false` after a crash. */
  readonly cleanHandoff: boolean
}
