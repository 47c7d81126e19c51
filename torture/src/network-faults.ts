/** The nemesis's network lane faults; `restart` is a long black-hole on a server the suite cannot restart. */
export const NETWORK_FAULTS = [
  'drop',
  'blackhole',
  'latency',
  'drop-replies',
  'late-delivery',
  'restart',
] as const
export type NetworkFault = (typeof NETWORK_FAULTS)[number]
