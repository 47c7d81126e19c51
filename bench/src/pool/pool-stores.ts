/** The stores the pool section runs on, in report order. */
export const POOL_STORES = ['sqlite', 'postgres', 'mariadb'] as const
export type PoolStoreName = (typeof POOL_STORES)[number]
