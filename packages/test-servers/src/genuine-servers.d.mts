export declare const GENUINE_SERVERS: {
  readonly mysql97: 'MYSQL97_URL'
  readonly postgres18: 'POSTGRES18_URL'
  readonly ferretdb2: 'FERRETDB2_URL'
  readonly dynamodbLocal: 'DYNAMODB_LOCAL_ENDPOINT'
}
export type GenuineServer = keyof typeof GENUINE_SERVERS
export declare function genuineServers(
  env?: Record<string, string | undefined>,
): Partial<Record<GenuineServer, string>>
export declare function notSetReason(variable: string): string
export declare function mongoServer(
  env?: Record<string, string | undefined>,
): { variable: 'MONGODB_URL' | 'FERRETDB2_URL'; url: string } | undefined
