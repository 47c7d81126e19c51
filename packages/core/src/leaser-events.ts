import diagnosticsChannel from 'node:diagnostics_channel'
import { InvalidArgumentError, type LeaseRecord } from '@worklease/spec'
import { checkFunction, describeValue } from './check-option.js'
import type { LeaseEndReason, LeaseLossReason, LeaseLostError } from './lease-lost-error.js'
import { throwLater } from './throw-later.js'

/** Fields every event carries. */
export interface LeaseEventBase {
  readonly workId: string
  readonly holderId: string
  readonly fencingToken: bigint
}

/**
 * What a {@link Leaser} reports, by event name. The same payloads are published on
 * `node:diagnostics_channel` (see {@link leaserChannels}).
 *
 * ```ts
 * leaser.on('lost', ({ workId, reason, error }) => log.warn({ workId, reason, err: error.cause }))
 * ```
 */
export interface LeaserEvents {
  /**
   * A lease was acquired; `attempts` counts the backend calls it took (LEASE_HELD polls included).
   * One whose reply was read after its local deadline (the process paused) is reported `lost` only.
   */
  acquired: LeaseEventBase & { readonly record: LeaseRecord; readonly attempts: number }
  /** A renew or checkpoint succeeded; `remainingMs` is the new time to the local deadline. */
  renewed: LeaseEventBase & { readonly op: 'renew' | 'checkpoint'; readonly remainingMs: number }
  /**
   * A renew or checkpoint (both renew the lease) failed with a transient store error and will be
   * retried; the lease is still held. A rising rate is the early warning of `lost`.
   */
  renewFailed: LeaseEventBase & {
    readonly op: 'renew' | 'checkpoint'
    readonly error: unknown
    readonly attempt: number
    readonly remainingMs: number
  }
  /** A release or readCheckpoint failed with a transient store error and will be retried. */
  callFailed: LeaseEventBase & {
    readonly op: 'release' | 'readCheckpoint'
    readonly error: unknown
    readonly attempt: number
    readonly remainingMs: number
  }
  /** The lease was lost; `error` is what its `signal` aborted with. */
  lost: LeaseEventBase & { readonly reason: LeaseLossReason; readonly error: LeaseLostError }
  /**
   * The holder ended the lease: `clean` is `true` once the store confirmed a release (also one by
   * `close()`), `false` after `abandon()` (left to expire, so the successor sees an unclean handoff).
   * An `abandon()` while a release is out and unanswered (`close()` giving up at its timeout does
   * that) is `false` too, though the release may still land: the successor's `cleanHandoff` then
   * reads `true`. `false` says the holder cannot vouch for the handoff, not that it is unclean.
   */
  released: LeaseEventBase & { readonly clean: boolean; readonly reason: LeaseEndReason }
}

/** The name of a {@link LeaserEvents} event. */
export type LeaserEventName = keyof LeaserEvents

/** A listener of one {@link LeaserEvents} event. */
export type LeaserListener<E extends LeaserEventName> = (event: LeaserEvents[E]) => void

/**
 * The `node:diagnostics_channel` channel names each event is published on, so metrics and tracing
 * can attach without a reference to the Leaser. Messages are the {@link LeaserEvents} payloads.
 *
 * ```ts
 * import diagnosticsChannel from 'node:diagnostics_channel'
 * diagnosticsChannel.subscribe(leaserChannels.lost, (message) => metrics.increment('lease.lost'))
 * ```
 */
export const leaserChannels = Object.freeze({
  acquired: 'worklease:acquired',
  renewed: 'worklease:renewed',
  renewFailed: 'worklease:renewFailed',
  callFailed: 'worklease:callFailed',
  lost: 'worklease:lost',
  released: 'worklease:released',
} as const satisfies Record<LeaserEventName, string>)

const channels = Object.fromEntries(
  Object.entries(leaserChannels).map(([event, name]) => [event, diagnosticsChannel.channel(name)]),
) as Record<LeaserEventName, diagnosticsChannel.Channel>

/** @internal A minimal typed emitter that also publishes on the diagnostics channels. */
export class LeaserEmitter {
  /**
   * Each event's listeners, replaced (never changed in place) by `on` and `off`: an emit walks the
   * list it started with, so listeners added or removed meanwhile take effect from the next event,
   * without a copy per event (one per renewal, 10,000 a second at 100,000 leases).
   */
  readonly #listeners = new Map<LeaserEventName, readonly ((event: never) => void)[]>()

  on<E extends LeaserEventName>(event: E, listener: LeaserListener<E>): () => void {
    // Refused now: a listener that is no function would throw at every event, each throw an
    // uncaught exception (see emit), and one for an event there is none of would never be called.
    if (typeof event !== 'string' || !Object.hasOwn(leaserChannels, event)) {
      throw new InvalidArgumentError(
        `event must be one of ${Object.keys(leaserChannels).join(', ')}, got ${describeValue(event)}`,
      )
    }
    checkFunction('listener', listener)
    const listeners = this.#listeners.get(event) ?? []
    const each = listener as (event: never) => void
    if (!listeners.includes(each)) this.#listeners.set(event, [...listeners, each])
    return () => this.off(event, listener)
  }

  off<E extends LeaserEventName>(event: E, listener: LeaserListener<E>): void {
    const listeners = this.#listeners.get(event)
    if (!listeners?.includes(listener as (event: never) => void)) return
    const rest = listeners.filter((each) => each !== listener)
    if (rest.length > 0) this.#listeners.set(event, rest)
    else this.#listeners.delete(event)
  }

  /**
   * Whether anyone listens to `event` (here or on its diagnostics channel): callers skip building a
   * payload nobody reads, which on an in-memory store is a visible share of a lease's cost.
   */
  wants(event: LeaserEventName): boolean {
    return channels[event].hasSubscribers || this.#listeners.has(event)
  }

  emit<E extends LeaserEventName>(event: E, payload: LeaserEvents[E]): void {
    const channel = channels[event]
    if (channel.hasSubscribers) channel.publish(payload)
    const listeners = this.#listeners.get(event)
    if (!listeners) return
    for (const listener of listeners) {
      try {
        ;(listener as LeaserListener<E>)(payload)
      } catch (error) {
        throwLater(error)
      }
    }
  }
}

/** @internal An emitter no event leaves: for a lease released before it was ever reported acquired. */
export class UnreportedEvents extends LeaserEmitter {
  override wants(): boolean {
    return false
  }
  override emit(): void {}
}
