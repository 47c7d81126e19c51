/** The nemesis's process lane faults; the clock faults apply to client-clock backends only. */
export const PROCESS_FAULTS = ['pause', 'kill', 'clock-skew', 'clock-jump'] as const
export type ProcessFault = (typeof PROCESS_FAULTS)[number]
