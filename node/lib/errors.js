'use strict';
// One error class for everything the package does: `code` is the error's
// kind as the component's contract names it (`lost`, `timeout`,
// `access-denied`, ...), `message` the host's own words.

/** What the addon puts before the JSON of a failure (see src/errors.rs). */
const MARKER = 'S3LEASE_ERROR ';

/** A lock's state, with its instants as Dates. */
function lockState(s) {
  if (s == null) return null;
  return {
    key: s.key,
    holder: s.holder ?? null,
    token: s.token ?? null,
    expiresAt: new Date(s.expiresAt),
    acquiredAt: s.acquiredAt == null ? null : new Date(s.acquiredAt),
    metadata: s.metadata,
    etag: s.etag,
    live: s.live,
    expiresInMs: s.expiresInMs,
  };
}

class S3LeaseError extends Error {
  constructor(info, options) {
    super(info.message, options);
    this.name = 'S3LeaseError';
    this.code = info.code;
    this.transient = Boolean(info.transient);
    for (const field of [
      'status', 'storeCode', 'requestId', 'field', 'key', 'objectKey', 'ourToken',
      'storedToken', 'waitedMs', 'store', 'endpoint', 'bucket',
    ]) {
      if (info[field] !== undefined) this[field] = info[field];
    }
    if (info.holder !== undefined) this.holder = lockState(info.holder);
  }
}

/** The addon's failure as an S3LeaseError; anything else as it is. */
function fromNative(e) {
  if (e instanceof Error && typeof e.message === 'string' && e.message.startsWith(MARKER)) {
    return new S3LeaseError(JSON.parse(e.message.slice(MARKER.length)));
  }
  return e;
}

/** Awaits `promise`, rethrowing a failure of the addon as an S3LeaseError. */
async function call(promise) {
  try {
    return await promise;
  } catch (e) {
    throw fromNative(e);
  }
}

/** `fn()` (synchronous), rethrowing as `call` does. */
function callSync(fn) {
  try {
    return fn();
  } catch (e) {
    throw fromNative(e);
  }
}

module.exports = { S3LeaseError, call, callSync, fromNative, lockState };
