// Types of the s3-lease package (checked by its tests with tsc --strict).
import { EventEmitter } from 'node:events';

/** The error kinds, as the component's contract names them, and the host's own. */
export type ErrorCode =
  | 'lost'
  | 'conflict'
  | 'clock-skewed'
  | 'access-denied'
  | 'no-such-bucket'
  | 'corrupt-lock-object'
  | 's3'
  | 'transport'
  | 'invalid-config'
  | 'invalid-argument'
  | 'timeout'
  | 'fenced'
  | 'store-unsafe'
  | 'limit-mismatch'
  | 'trap'
  | 'host';

/** A key's lock as read. */
export interface LockState {
  key: string;
  /** null when the object records none (a semaphore, or a client of the plain design). */
  holder: string | null;
  token: number | null;
  /** When it lapses (the epoch if released). */
  expiresAt: Date;
  acquiredAt: Date | null;
  metadata: string;
  etag: string;
  /** Not released, and not expired by the client's expiry clock. */
  live: boolean;
  expiresInMs: number;
}

/** Every failure of the package: `code` says which kind, `message` is the host's. */
export class S3LeaseError extends Error {
  readonly name: 'S3LeaseError';
  readonly code: ErrorCode;
  /** Worth another attempt (transport errors, 5xx, 429, repeated 409s). */
  readonly transient: boolean;
  /** The store's HTTP status, when it answered with an error. */
  readonly status?: number;
  /** The store's own error code (`AccessDenied`, `NoSuchBucket`, ...). */
  readonly storeCode?: string;
  readonly requestId?: string;
  /** The setting an `invalid-config` error is about. */
  readonly field?: string;
  readonly key?: string;
  /** Who holds the key: a `timeout`'s last holder seen, a `lost` lease's taker. */
  readonly holder?: LockState | null;
  readonly objectKey?: string;
  readonly ourToken?: number;
  /** The newer token a `fenced` write met. */
  readonly storedToken?: number;
  readonly waitedMs?: number;
  /** The store the error happened at (its kind, endpoint and bucket). */
  readonly store?: string;
  readonly endpoint?: string;
  readonly bucket?: string;
}

/** What an AWS SDK v3 credential provider returns (`fromNodeProviderChain()`, say). */
export interface AwsCredentialIdentity {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** When they stop working: the client asks the provider again before then. */
  expiration?: Date;
}

export type CredentialProvider = () => Promise<AwsCredentialIdentity>;

export interface ConnectOptions {
  /** Where the locks live: `s3` (the default), `dynamodb`, `azure-blob` or `gcs`. */
  store?: 's3' | 'dynamodb' | 'azure-blob' | 'gcs';
  bucket?: string;
  /** DynamoDB: the table. */
  table?: string;
  /** Azure Blob Storage: the container. */
  container?: string;
  /** An S3-compatible, DynamoDB, Azure or GCS endpoint instead of the cloud's own. */
  endpoint?: string;
  region?: string;
  addressing?: 'path' | 'virtual-hosted';
  /** Prepended to every key this client names. */
  prefix?: string;
  /**
   * AWS keys, or an AWS SDK v3 credential provider (called again before
   * the credentials expire). Default: the AWS SDKs' own chain (environment,
   * profiles, web identity, container and instance credentials).
   */
  credentials?: AwsCredentialIdentity | CredentialProvider;
  /** Azure: the account, with `accountKey` or `sasToken`; or a `connectionString`. */
  account?: string;
  accountKey?: string;
  sasToken?: string;
  connectionString?: string;
  strategy?: 'single-object' | 'epoch-objects';
  expiryClock?: 'server' | 'holder' | 'observed';
  /** Run the store preflight before the first grant. */
  preflight?: boolean;
  /** Keep the grant log: a record of every grant and release (docs/audit.md). */
  audit?: boolean;
  /** Only clients with the same seal key accept each other's leases. */
  sealKey?: string;
  /** How long one request may take, ms (default 10 s). */
  requestTimeout?: number;
  /** Instances of the component (each serves one call at a time; default 8). */
  instances?: number;
  /**
   * How long the end of the process (or worker thread) waits for the
   * releases of what the client still holds, ms (default 2000; 0: they are
   * sent, not waited for; a lease whose release does not land runs out at
   * its ttl).
   */
  exitTimeout?: number;
}

export interface AcquireOptions {
  /** How long the lease lasts without a renew, ms (default 30 s). It renews itself. */
  ttl?: number;
  /** How long to wait for the key, ms (default 60 s; 0: one attempt; Infinity: as long as it takes). */
  wait?: number;
  /** Who holds it (default: one chosen per wait). */
  holder?: string;
  /** Up to 4 KiB kept in the lock object, for readers. */
  metadata?: string;
  /** More than 1: a semaphore of that many slots (every contender passes the same). */
  limit?: number;
  /** Serve waiters in the order they asked. */
  fair?: boolean;
  /** Counted as held this long after each renew is sent, ms (default 9/10 of the ttl). */
  deadline?: number;
  /** Gives the wait up (rejecting with the signal's reason); nothing is left held. */
  signal?: AbortSignal;
}

/** Why a lease ended. */
export interface LeaseEnd {
  reason: 'taken' | 'expired' | 'failed' | 'released';
  message: string;
  /** For `taken`: the lock as the renew found it. */
  holder?: LockState | null;
}

/** A lease's record: plain data, as the command line prints it. */
export interface LeaseRecord {
  key: string;
  token: number;
  holder: string;
  etag: string;
  /** ms since the epoch (the holder's clock). */
  expiresAt: number;
  acquiredAt: number;
  ttlMs: number;
  metadata: string;
  seal: string;
}

export interface FencedWrite {
  objectKey: string;
  etag: string;
  token: number;
  previousToken: number | null;
}

/** One grant of a key, from its grant log; times are the store's clock. */
export interface AuditEntry {
  token: number;
  holder: string;
  ttlMs: number;
  /** The grant's write; null for a record a successor back-filled. */
  grantedAt: Date | null;
  ended: 'released' | 'expired' | 'taken-over' | 'held' | 'unknown';
  endedAt: Date | null;
  heldMs: number | null;
  /** The holder, or the grantee that back-filled the record. */
  writtenBy: string;
  backfilled: boolean;
}

export interface FencedObject {
  objectKey: string;
  body: Buffer;
  etag: string;
  contentType: string;
  /** The token of the write that stored it (null: written without one). */
  token: number | null;
}

export interface FenceOptions {
  /** Refuse an object written under the same token too. */
  rejectEqualToken?: boolean;
}

export type Data = string | Buffer | ArrayBufferView | ArrayBuffer;

/** A held lease; it renews itself until released or lost. */
export class Lease {
  private constructor();
  readonly key: string;
  readonly holder: string;
  readonly acquiredAt: Date;
  readonly metadata: string;
  /** The fencing token, as last renewed. */
  readonly token: number;
  /** When it lapses unless renewed (the holder's clock), as last renewed. */
  readonly expiresAt: Date;
  /** Whether it is surely still held, judged now. */
  readonly held: boolean;
  /** While held: until when it surely is, unless renewed first; else null. */
  readonly heldUntil: Date | null;
  /** Resolves with why the lease ended (never rejects). */
  readonly lost: Promise<LeaseEnd>;
  /** Aborted, with an S3LeaseError of code `lost`, when the lease ends. */
  readonly signal: AbortSignal;
  /** The token while surely held; throws S3LeaseError `lost` otherwise. */
  heldToken(): number;
  record(): LeaseRecord;
  fencedPut(objectKey: string, data: Data, contentType?: string, options?: FenceOptions): Promise<FencedWrite>;
  fencedDelete(objectKey: string): Promise<void>;
  fencedGet(objectKey: string): Promise<FencedObject | null>;
  release(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface SlotEntry {
  holder: string;
  token: number | null;
  expiresAt: Date;
  acquiredAt: Date;
  metadata: string;
  live: boolean;
  expiresInMs: number;
}

export interface SemaphoreState {
  lock: LockState;
  limit: number;
  holders: SlotEntry[];
  queue: SlotEntry[];
}

export interface CapabilityResult {
  capability: string;
  verdict: 'pass' | 'fail' | 'unknown';
  status: number | null;
  code: string;
  detail: string;
  silent: boolean;
}

export interface PreflightReport {
  results: CapabilityResult[];
  clockOffset: { offsetMs: number; uncertaintyMs: number } | null;
  safeStrategies: string[];
  safeExpiryClocks: string[];
  recommendedStrategy: string | null;
  configSafe: boolean;
  notes: string[];
  requests: number;
}

export interface CloseReport {
  released: number;
  alreadyOver: number;
  failed: { key: string; code: ErrorCode; message: string }[];
  unfinished: number;
  allReleased: boolean;
}

export interface ClientStats {
  leasesKept: number;
  renewsSent: number;
  renewsFailed: number;
  credentialsRefreshes: number;
  credentialsError: string | null;
}

export interface ElectOptions {
  /** The leader's lease ttl, ms (default 15 s). */
  leaseDuration?: number;
  /** Leadership ends this long after the last successful renew was sent, ms (default 10 s). */
  renewDeadline?: number;
  /** How often a leader renews and a follower looks, ms (default 2 s). */
  retryPeriod?: number;
  holder?: string;
  metadata?: string;
}

export interface LeaderLease {
  key: string;
  token: number;
  holder: string;
  etag: string;
  expiresAt: Date;
  acquiredAt: Date;
  ttlMs: number;
  metadata: string;
  seal: string;
}

export type ElectionEvent =
  | { type: 'elected'; lease: LeaderLease }
  | { type: 'stopped'; reason: 'renew-deadline' | 'lost' | 'resigned' }
  | { type: 'leader'; leader: LockState | null }
  | { type: 'failed'; error: S3LeaseError };

/** A campaign for one key: events as an EventEmitter and an async iterator. */
export class Elector extends EventEmitter {
  private constructor();
  readonly key: string;
  readonly client: Client;
  readonly role: 'leader' | 'follower' | 'candidate';
  readonly isLeader: boolean;
  readonly lease: LeaderLease | null;
  readonly leader: LockState | null;
  readonly lastError: string | null;
  fencedPut(objectKey: string, data: Data, contentType?: string, options?: FenceOptions): Promise<FencedWrite>;
  resign(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
  [Symbol.asyncIterator](): AsyncIterator<ElectionEvent>;
  on(event: 'elected', listener: (lease: LeaderLease) => void): this;
  on(event: 'stopped', listener: (reason: 'renew-deadline' | 'lost' | 'resigned') => void): this;
  on(event: 'leader', listener: (leader: LockState | null) => void): this;
  on(event: 'failed', listener: (error: S3LeaseError) => void): this;
  on(event: 'end', listener: () => void): this;
}

/** A client of one store; its calls never block the event loop. */
export class Client {
  private constructor();
  static connect(options?: ConnectOptions): Promise<Client>;
  /** As the `s3-lease` command line reads the environment (`S3LEASE_*`, the SDKs' variables). */
  static fromEnv(overrides?: ConnectOptions): Promise<Client>;
  readonly storeName: string;
  acquire(key: string, options?: AcquireOptions): Promise<Lease>;
  status(key: string): Promise<LockState | null>;
  slots(key: string): Promise<SemaphoreState | null>;
  fencedGet(objectKey: string): Promise<FencedObject | null>;
  /** The key's grant log, oldest first (`since`: from the first grant at or after it). */
  audit(key: string, options?: { since?: Date | number }): Promise<AuditEntry[]>;
  preflight(): Promise<PreflightReport>;
  elect(key: string, options?: ElectOptions): Promise<Elector>;
  stats(): ClientStats;
  close(timeoutMs?: number): Promise<CloseReport>;
  [Symbol.asyncDispose](): Promise<void>;
}
