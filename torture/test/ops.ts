import type { Op, OpName, Outcome } from '../src/history.js'

let next = 0

/** A hand-made history entry; times in ms, `complete: Infinity` for an indeterminate op. */
export function op(
  kind: OpName,
  fields: Partial<Omit<Op, 'op' | 'token'>> & { token?: bigint | number | null; outcome?: Outcome },
): Op {
  const outcome = fields.outcome ?? 'ok'
  return {
    id: fields.id ?? `t:${next++}`,
    process: fields.process ?? 'p0.0',
    holder: fields.holder ?? 'h',
    op: kind,
    workId: fields.workId ?? 'w',
    token: fields.token === undefined || fields.token === null ? null : BigInt(fields.token),
    ttl: fields.ttl ?? (kind === 'acquire' || kind === 'renew' || kind === 'checkpoint' ? 1_000 : null),
    value: fields.value ?? null,
    invoke: fields.invoke ?? 0,
    complete: outcome === 'info' ? Number.POSITIVE_INFINITY : (fields.complete ?? (fields.invoke ?? 0) + 1),
    outcome,
    code: fields.code ?? null,
    read: fields.read ?? null,
    clean: fields.clean ?? (kind === 'readCheckpoint' && outcome === 'ok' ? true : null),
    heldBy: fields.heldBy ?? null,
    offsetAtInvoke: fields.offsetAtInvoke ?? 0,
    offsetAtComplete: fields.offsetAtComplete ?? fields.offsetAtInvoke ?? 0,
  }
}
