export declare const FERRETDB_VERSION: string
export declare function ferretdbBinaryPath(version?: string): string
export declare function buildFerretdb(options?: { version?: string; log?: (message: string) => void }): string
export interface FerretdbServer {
  readonly url: string
  readonly port: number
  readonly pid: number | undefined
  stop(): Promise<void>
}
export declare function startFerretdb(options?: {
  binary?: string
  log?: (message: string) => void
}): Promise<FerretdbServer>
export declare function ferretdbArgs(options: {
  dir: string
  port: number
  logLevel?: 'debug' | 'info' | 'warn' | 'error'
}): string[]
