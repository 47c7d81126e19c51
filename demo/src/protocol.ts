import type { BackendName } from './options.js'

/** What a worker needs to open the stores: plain data, sent to each child process. */
export interface StoreSpec {
  backend: BackendName
  /** Lease table, collection or DynamoDB table name (unique per run). */
  leaseTable: string
  /** Downstream table name (unique per run). */
  outputTable: string
  /** The downstream database: the lease database for SQL backends, else a SQLite file. */
  downstream:
    | { family: 'postgres'; url: string }
    | { family: 'mysql'; url: string }
    | { family: 'sqlite'; file: string }
  /** The lease store's address, for backends with a server. */
  url?: string
  /** The MongoDB database. */
  database?: string
  /** FerretDB 1.x needs findAndModify without a projection. */
  ferretdb?: boolean
  /** dynalite has no PartiQL, so no renewMany. */
  dynalite?: boolean
  /** The SQLite lease database file. */
  file?: string
}

/** Everything a worker is told at start. */
export interface WorkerConfig {
  name: string
  store: StoreSpec
  items: string[]
  /** Items already done when the worker starts, so it does not acquire them just to find out. */
  done: string[]
  steps: number
  stepMs: number
  ttlMs: number
  seed: number
  fence: boolean
}

/** Worker → coordinator. Tokens are bigints (the IPC channel uses structured clone). */
export type WorkerEvent =
  | { type: 'ready'; holderId: string; pid: number }
  | { type: 'acquired'; item: string; token: bigint; cleanHandoff: boolean; stepsDone: number }
  | { type: 'claimed'; item: string; token: bigint; accepted: boolean }
  /** `sentAt` (Date.now()) lets the coordinator tell whether the worker is still early in the step. */
  | { type: 'step'; item: string; token: bigint; step: number; sentAt: number }
  | { type: 'wrote'; item: string; token: bigint; step: number; accepted: boolean }
  | { type: 'checkpointed'; item: string; token: bigint; step: number }
  | { type: 'done'; item: string; token: bigint }
  | { type: 'lost'; item: string; token: bigint; reason: string }
  | { type: 'released'; item: string; token: bigint; clean: boolean }
  | { type: 'failed'; message: string }
  | { type: 'exiting' }

/** Coordinator → worker. */
export type CoordinatorMessage =
  | { type: 'start'; config: WorkerConfig }
  | { type: 'item-done'; item: string }
  | { type: 'finish' }
