/** A running dynalite. */
export interface DynaliteServer {
  /** `http://127.0.0.1:<port>`, for `DynamoDBClient`'s `endpoint`. */
  readonly endpoint: string
  readonly port: number
  /** The process serving it: this one for `in: 'process'`. */
  readonly pid: number | undefined
  stop(): Promise<void>
}
export declare function startDynalite(options?: { in?: 'process' | 'child' }): Promise<DynaliteServer>
export declare function dynaliteArgs(options: { port: number; path?: string }): string[]
export declare function dynaliteCliPath(): string
export declare function dynaliteVersion(): string
