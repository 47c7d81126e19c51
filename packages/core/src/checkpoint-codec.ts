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
 * your code decodes to whatever it held.
 *
 * ```ts
 * const leaser = new Leaser({ backend, ttlMs: 30_000, codec: jsonCodec<{ cursor: string }>() })
 * ```
 */
export function jsonCodec<S>(): CheckpointCodec<S> {
  const encoder = new TextEncoder()
  const decoder = new TextDecoder('utf-8', { fatal: true })
  return Object.freeze({
    encode: (state: S) => encoder.encode(JSON.stringify(state)),
    decode: (bytes: Uint8Array) => JSON.parse(decoder.decode(bytes)) as S,
  })
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
