'use strict';
const { EventEmitter } = require('node:events');
const { S3LeaseError, call, lockState } = require('./errors');

const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose');
/** Events kept for an async iterator not yet reading (role changes are rare). */
const KEPT_EVENTS = 1000;

function leaseInfo(record) {
  return { ...record, expiresAt: new Date(record.expiresAt), acquiredAt: new Date(record.acquiredAt) };
}

/** An event of the campaign, as emitted and iterated. */
function eventOf(native) {
  switch (native.type) {
    case 'elected':
      return { type: 'elected', lease: leaseInfo(native.lease) };
    case 'leader':
      return { type: 'leader', leader: lockState(native.leader) };
    case 'failed':
      return { type: 'failed', error: new S3LeaseError({ code: 'host', message: native.message }) };
    default:
      return native;
  }
}

/**
 * A campaign for leadership of one key, on the host's scheduler. An
 * EventEmitter (`elected` with the lease, `stopped` with the reason,
 * `leader` with who leads now, `failed` with an error, `end`) and an async
 * iterator of the same events, `{ type, ... }`, until it is resigned.
 */
class Elector extends EventEmitter {
  #native;
  #events = [];
  #waiting = null;
  #ended = false;

  /** Made by `client.elect`. */
  constructor(key, client) {
    super();
    this.key = key;
    this.client = client;
  }

  _attach(nativeElector) {
    this.#native = nativeElector;
  }

  _event(native) {
    if (native.type === 'end') {
      this.#ended = true;
      this.emit('end');
    } else {
      const event = eventOf(native);
      this.#events.push(event);
      if (this.#events.length > KEPT_EVENTS) this.#events.shift();
      this.emit(event.type, event.type === 'stopped' ? event.reason : event.lease ?? event.leader ?? event.error);
    }
    if (this.#waiting) {
      const wake = this.#waiting;
      this.#waiting = null;
      wake();
    }
  }

  /** `leader`, `follower` or `candidate`, judged now (leadership ends at its deadline). */
  get role() {
    return this.#native.role().role;
  }

  get isLeader() {
    return this.role === 'leader';
  }

  /** While leading: the lease (its `token` fences writes); else null. */
  get lease() {
    const role = this.#native.role();
    return role.role === 'leader' ? leaseInfo(role.lease) : null;
  }

  /** While following: the leader as last seen; else null. */
  get leader() {
    const role = this.#native.role();
    return role.role === 'follower' ? lockState(role.leader) : null;
  }

  /** Why the last step failed, if it did (the elector keeps trying); else null. */
  get lastError() {
    return this.#native.lastError() ?? null;
  }

  /** A fenced write under the leader's lease; S3LeaseError `lost` when not leading. */
  async fencedPut(objectKey, data, contentType = 'application/octet-stream', options = {}) {
    const { bytes } = require('./lease');
    return call(this.#native.fencedPut(objectKey, bytes(data), contentType, Boolean(options.rejectEqualToken)));
  }

  /** Releases the lease if leading and stops campaigning. */
  async resign() {
    await call(this.#native.resign());
  }

  async [asyncDispose]() {
    await this.resign();
  }

  /** The campaign's events, from its start, until it is resigned. */
  async *[Symbol.asyncIterator]() {
    for (;;) {
      while (this.#events.length > 0) yield this.#events.shift();
      if (this.#ended) return;
      await new Promise((resolve) => {
        this.#waiting = resolve;
      });
    }
  }
}

module.exports = { Elector };
