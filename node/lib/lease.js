'use strict';
const { S3LeaseError, call, callSync, lockState } = require('./errors');

const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose');

/** Bytes from a string (UTF-8), a Buffer or any ArrayBuffer view. */
function bytes(data) {
  if (Buffer.isBuffer(data)) return data;
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  throw new TypeError('data must be a string, a Buffer, a TypedArray or an ArrayBuffer');
}

/** Why a lease ended, as `lost` resolves with it. */
function endReason(native) {
  return Object.freeze({
    reason: native.reason,
    message: native.message,
    holder: native.holder === undefined ? undefined : lockState(native.holder),
  });
}

/**
 * A held lease. It renews itself on the host's scheduler (a thread of the
 * addon's), whether or not JavaScript is running, until it is released or
 * lost. `lost` resolves and `signal` aborts when it ends.
 */
class Lease {
  #native;
  #client;
  #controller = new AbortController();

  constructor(native, client) {
    this.#native = native;
    this.#client = client;
    const record = native.record();
    /** The key, as the caller named it. */
    this.key = record.key;
    /** Who holds it (the holder id). */
    this.holder = record.holder;
    /** When it was granted (the holder's clock). */
    this.acquiredAt = new Date(record.acquiredAt);
    /** The metadata kept in the lock object. */
    this.metadata = record.metadata;
    /** Aborted (with an S3LeaseError of code `lost`) when the lease ends. */
    this.signal = this.#controller.signal;
    /** Resolves with why the lease ended: `taken`, `expired`, `failed` or `released`. */
    this.lost = new Promise((resolve) => {
      native.onEnd((ended) => {
        const reason = endReason(ended);
        this.#controller.abort(
          new S3LeaseError({
            code: 'lost',
            message: `the lease on ${this.key} ended: ${reason.message}`,
            key: this.key,
            holder: ended.holder,
          }),
        );
        resolve(reason);
      });
    });
  }

  /** The fencing token (it rises on every grant of the key). */
  get token() {
    return this.#native.record().token;
  }

  /** When the lease lapses unless renewed (the holder's clock), as last renewed. */
  get expiresAt() {
    return new Date(this.#native.record().expiresAt);
  }

  /** Whether it is surely still held, judged now. */
  get held() {
    return this.#native.isHeld();
  }

  /** While held: until when it surely is, unless a renew succeeds first; else null. */
  get heldUntil() {
    const ms = this.#native.heldUntil();
    return ms == null ? null : new Date(ms);
  }

  /** The token, while the lease is surely held; throws S3LeaseError `lost` otherwise. */
  heldToken() {
    return callSync(() => this.#native.heldToken());
  }

  /** The lease's record as last renewed (plain data: the command line's lease JSON fields). */
  record() {
    return this.#native.record();
  }

  /**
   * Writes `data` to `objectKey` under the lease's token: the store refuses
   * it (S3LeaseError `fenced`) if a newer token already wrote there, and it
   * is refused without a request once the lease is no longer surely held.
   */
  async fencedPut(objectKey, data, contentType = 'application/octet-stream', options = {}) {
    return call(
      this.#native.fencedPut(objectKey, bytes(data), contentType, Boolean(options.rejectEqualToken)),
    );
  }

  /** Deletes `objectKey` under the lease's token (refused as `fencedPut` is). */
  async fencedDelete(objectKey) {
    return call(this.#native.fencedDelete(objectKey));
  }

  /** Reads a fenced object (`body` a Buffer, `token` the writer's); null if absent. */
  async fencedGet(objectKey) {
    return this.#client.fencedGet(objectKey);
  }

  /**
   * Stops renewing and releases the lease, so others need not wait out its
   * ttl. A lease already over resolves without a request.
   */
  async release() {
    await call(this.#native.release());
  }

  /** `await using lease = await client.acquire(...)` releases it at the end of the block. */
  async [asyncDispose]() {
    await this.release();
  }
}

module.exports = { Lease, bytes, asyncDispose };
