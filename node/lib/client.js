'use strict';
const native = require('./native');
const { S3LeaseError, call, lockState } = require('./errors');
const { Lease, asyncDispose } = require('./lease');
const { Elector } = require('./elector');

/** `wait: Infinity` (or `null`): ten years, as good as forever. */
const FOREVER_MS = 10 * 365 * 24 * 3600 * 1000;
/** How long the end of the process (or worker) waits to release what a client holds. */
const EXIT_TIMEOUT_MS = 2000;

// At the process's (or this worker's) end, every client of this thread
// releases what it still holds (src/exit.rs). 'exit' runs for an event loop
// that ran dry and for process.exit(); a worker's terminate() runs the
// addon's own cleanup hook instead.
process.once('exit', () => native.releaseAtExit());

function ms(name, value, fallback) {
  if (value === undefined) return fallback;
  if (value === Infinity || value === null) return FOREVER_MS;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`${name} must be a number of milliseconds (or Infinity), not ${value}`);
  }
  return Math.round(value);
}

/** Options without the ones left out (the addon takes absent, not undefined). */
function defined(object) {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined && v !== null));
}

/** `credentials:` as the addon takes it: fixed keys, or a provider function. */
function credentialOptions(credentials) {
  if (credentials === undefined || credentials === null) return { keys: {}, provider: undefined };
  if (typeof credentials === 'function') {
    // An AWS SDK v3 provider: async, { accessKeyId, secretAccessKey,
    // sessionToken, expiration (a Date) }.
    const provider = async () => {
      const c = await credentials();
      if (!c || typeof c.accessKeyId !== 'string' || typeof c.secretAccessKey !== 'string') {
        throw new TypeError('the credentials provider returned no accessKeyId and secretAccessKey');
      }
      const expiration = c.expiration == null ? undefined : new Date(c.expiration).getTime();
      return defined({
        accessKeyId: c.accessKeyId,
        secretAccessKey: c.secretAccessKey,
        sessionToken: c.sessionToken || undefined,
        expirationMs: Number.isFinite(expiration) ? expiration : undefined,
      });
    };
    return { keys: {}, provider };
  }
  if (typeof credentials.accessKeyId !== 'string' || typeof credentials.secretAccessKey !== 'string') {
    throw new TypeError('credentials must be a provider function or { accessKeyId, secretAccessKey, sessionToken? }');
  }
  return {
    keys: defined({
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      sessionToken: credentials.sessionToken,
    }),
    provider: undefined,
  };
}

// One 'abort' listener per signal, however many acquires wait on it: a
// listener each would pass Node's limit of 10 per EventTarget and warn
// (MaxListenersExceededWarning) when a program shares one signal among
// many waits, as a shutdown signal is.
const waitsBySignal = new WeakMap();

function watchAbort(signal, canceller) {
  let watch = waitsBySignal.get(signal);
  if (!watch) {
    const cancellers = new Set();
    const onAbort = () => {
      waitsBySignal.delete(signal);
      for (const c of cancellers) c.cancel();
    };
    watch = { cancellers, onAbort };
    waitsBySignal.set(signal, watch);
    signal.addEventListener('abort', onAbort, { once: true });
  }
  watch.cancellers.add(canceller);
  return () => {
    watch.cancellers.delete(canceller);
    if (watch.cancellers.size === 0 && waitsBySignal.get(signal) === watch) {
      waitsBySignal.delete(signal);
      signal.removeEventListener('abort', watch.onAbort);
    }
  };
}

/**
 * A client of one store (an S3 bucket, a DynamoDB table, an Azure Blob
 * Storage container or a Google Cloud Storage bucket). Its calls run off
 * the JavaScript thread; its leases renew themselves.
 */
class Client {
  #native;

  /** Use `Client.connect` or `Client.fromEnv`. */
  constructor(nativeClient) {
    if (!(nativeClient instanceof native.NativeClient)) {
      throw new TypeError('use Client.connect({ ... }) or Client.fromEnv()');
    }
    this.#native = nativeClient;
  }

  /**
   * Connects to the store `options` name. No request is sent: the
   * component checks the configuration, and credentials are fetched.
   */
  static async connect(options = {}) {
    return Client.#open(options, false);
  }

  /**
   * Connects as the `s3-lease` command line does: the store the
   * environment names (`S3LEASE_BUCKET`, `S3LEASE_STORE`, `S3LEASE_TABLE`,
   * `S3LEASE_CONTAINER`, `S3LEASE_PREFIX`, `S3LEASE_ENDPOINT`,
   * `S3LEASE_REGION`, `S3LEASE_STRATEGY`, `S3LEASE_EXPIRY_CLOCK`,
   * `S3LEASE_CHECK_STORE`, `S3LEASE_AUDIT`, `S3LEASE_SEAL_KEY`, read by the host as the
   * command line reads them), with the AWS (Azure, Google) SDKs' own
   * variables and files for the rest. `overrides` win.
   */
  static async fromEnv(overrides = {}) {
    return Client.#open(overrides, true);
  }

  static async #open(options, fromEnv) {
    const { credentials, exitTimeout, requestTimeout, ...rest } = options;
    const { keys, provider } = credentialOptions(credentials);
    const settings = defined({
      ...rest,
      ...keys,
      requestTimeoutMs: requestTimeout === undefined ? undefined : ms('requestTimeout', requestTimeout),
      fromEnv,
    });
    const exitMs = ms('exitTimeout', exitTimeout, EXIT_TIMEOUT_MS);
    return new Client(await call(native.connect(settings, provider, exitMs)));
  }

  /** The store's name: `S3`, `DynamoDB`, `Azure Blob Storage` or `Google Cloud Storage`. */
  get storeName() {
    return this.#native.storeName;
  }

  /**
   * Waits up to `wait` ms (default 60 s; 0: one attempt; Infinity: as
   * long as it takes) for `key`, then holds it for `ttl` ms (default 30 s),
   * renewing itself. `limit` > 1 makes the key a semaphore of that many
   * slots; `fair` serves waiters in the order they asked. `signal` gives
   * the wait up (nothing is left held). Rejects with S3LeaseError
   * `timeout` (its `holder` says who holds the key) when the wait runs out.
   */
  async acquire(key, options = {}) {
    const { ttl, wait, holder, limit, fair, metadata, deadline, signal } = options;
    const args = defined({
      ttlMs: ms('ttl', ttl, 30_000),
      waitMs: ms('wait', wait, 60_000),
      holder,
      metadata,
      limit,
      fair,
      deadlineMs: deadline === undefined ? undefined : ms('deadline', deadline),
    });
    if (signal?.aborted) throw signal.reason;
    const canceller = signal ? new native.Canceller() : undefined;
    const unwatch = signal ? watchAbort(signal, canceller) : () => {};
    try {
      return new Lease(await call(this.#native.acquire(key, args, canceller)), this);
    } catch (e) {
      if (e instanceof S3LeaseError && e.code === 'aborted' && signal) throw signal.reason;
      throw e;
    } finally {
      unwatch();
    }
  }

  /** The key's lock as read now (its holder, token, expiry); null if never locked. */
  async status(key) {
    return lockState(await call(this.#native.status(key)));
  }

  /** A semaphore's holders and queue; null for a plain lock. */
  async slots(key) {
    const s = await call(this.#native.slots(key));
    if (s == null) return null;
    const entry = (e) => ({ ...e, expiresAt: new Date(e.expiresAt), acquiredAt: new Date(e.acquiredAt) });
    return { lock: lockState(s.lock), limit: s.limit, holders: s.holders.map(entry), queue: s.queue.map(entry) };
  }

  /** A fenced object: `{ objectKey, body (Buffer), contentType, etag, token }`; null if absent. */
  async fencedGet(objectKey) {
    const read = await call(this.#native.fencedGet(objectKey));
    return read == null ? null : { ...read.info, body: read.body };
  }

  /**
   * The key's grant log, oldest first (kept by clients connected with
   * `audit: true`): each grant's `token`, `holder`, `grantedAt`, how it
   * `ended` (`released`, `expired`, `taken-over`, `held`, `unknown`) and
   * when, on the store's clock; `since` (a Date or ms) starts at the first
   * grant at or after it.
   */
  async audit(key, options = {}) {
    const since = options.since == null ? undefined : new Date(options.since).getTime();
    const date = (ms) => (ms == null ? null : new Date(ms));
    const entries = await call(this.#native.audit(key, since));
    return entries.map((e) => ({ ...e, grantedAt: date(e.grantedAt), endedAt: date(e.endedAt) }));
  }

  /** Probes the store with real requests: what it can do, which settings are safe on it. */
  async preflight() {
    return call(this.#native.preflight());
  }

  /**
   * Campaigns for leadership of `key` (client-go's three durations, in
   * ms: `leaseDuration` 15 s, `renewDeadline` 10 s, `retryPeriod` 2 s).
   * Resolves with the Elector once campaigning; it keeps the process
   * alive until `resign()`.
   */
  async elect(key, options = {}) {
    const args = defined({
      leaseDurationMs: options.leaseDuration === undefined ? undefined : ms('leaseDuration', options.leaseDuration),
      renewDeadlineMs: options.renewDeadline === undefined ? undefined : ms('renewDeadline', options.renewDeadline),
      retryPeriodMs: options.retryPeriod === undefined ? undefined : ms('retryPeriod', options.retryPeriod),
      holder: options.holder,
      metadata: options.metadata,
    });
    const elector = new Elector(key, this);
    elector._attach(await call(this.#native.elect(key, args, (event) => elector._event(event))));
    return elector;
  }

  /** What the client's scheduler of renewals holds and has done. */
  stats() {
    return this.#native.stats();
  }

  /**
   * Releases every lease the client holds and waits up to `timeout` ms
   * (default 10 s) for the releases; resolves with what became of them.
   * After it, the client grants no more leases. Electors are not touched:
   * resign them first.
   */
  async close(timeout = 10_000) {
    return call(this.#native.close(ms('timeout', timeout)));
  }

  /** `await using client = await Client.connect(...)` closes it at the end of the block. */
  async [asyncDispose]() {
    await this.close();
  }
}

module.exports = { Client, FOREVER_MS };
