/**
 * A storage profile: where a database's tables live and with which options. The default profile comes from
 * STORAGE_ROOT / STORAGE_OPTIONS / STORAGE_CLIENT_OPTIONS; STORAGE_PROFILES (JSON: name → {root, options,
 * client_options?, vend?, role_arn?, …}) adds more. Parsed and validated once at start-up (src/platform/config/config.ts).
 */
export type StorageScheme = 'file' | 's3' | 'gs' | 'az';

export interface StorageProfile {
  name: string;
  scheme: StorageScheme;
  /**
   * The root as the engine reads it: an absolute local path for `file`, otherwise `s3://bucket/prefix` (no trailing
   * slash; the prefix may be empty).
   */
  root: string;
  /** Object stores: the bucket (S3, GCS) or container (Azure). */
  bucket?: string;
  /** Object stores: the key prefix under the bucket, without leading or trailing slash ('' for the bucket root). */
  prefix: string;
  /** The server's own engine options (Lance storage option keys). Secret: never logged, never answered. */
  options: Record<string, string>;
  /** Options handed to clients by static vending (may hold keys meant for clients). Never logged. */
  clientOptions?: Record<string, string>;
  /** false: answers never carry storage_options for this profile. */
  vend: boolean;
  /** S3 only: temporary vending through STS AssumeRole with a session policy limited to the table's prefix. */
  sts?: {
    roleArn: string;
    /** STS endpoint (default: the AWS regional endpoint); a stub in tests. */
    endpoint?: string;
    region?: string;
    externalId?: string;
    /** Lifetime of vended credentials (900..43200 s; default 3600). */
    durationSeconds: number;
  };
}

/** Access a vended credential grants: read-only for read keys, read-write for write keys. */
export type VendAccess = 'read' | 'write';
