// Locks on the suite's SeaweedFS: what a lease says, waits, fenced writes,
// errors, cancelling a wait, credentials from a provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { createRequire } from 'node:module';
import { Client, S3LeaseError } from 's3-lease';
import { envOf, s3Options, sleep } from './fixtures.mjs';

test('a lease says what it holds, renews itself and is released for the next holder', async () => {
  const client = await Client.connect(await s3Options('basics'));
  assert.equal(client.storeName, 'S3');
  const lease = await client.acquire('nightly', { ttl: 3000, holder: 'first', metadata: 'job 1' });
  assert.equal(lease.key, 'nightly');
  assert.equal(lease.holder, 'first');
  assert.equal(lease.metadata, 'job 1');
  assert.ok(Number.isInteger(lease.token) && lease.token >= 1);
  assert.ok(lease.held);
  assert.ok(lease.expiresAt instanceof Date && lease.expiresAt > new Date());
  assert.ok(lease.heldUntil instanceof Date);
  assert.equal(lease.heldToken(), lease.token);
  assert.equal(lease.signal.aborted, false);
  const status = await client.status('nightly');
  assert.equal(status.holder, 'first');
  assert.equal(status.token, lease.token);
  assert.ok(status.live);
  // Past its ttl: still held, because it renewed itself.
  const firstExpiry = lease.expiresAt;
  await sleep(3500);
  assert.ok(lease.held, 'renewed on the host scheduler');
  assert.ok(lease.expiresAt > firstExpiry);
  assert.ok(client.stats().renewsSent >= 2, JSON.stringify(client.stats()));
  await lease[Symbol.asyncDispose]();
  assert.equal(lease.held, false);
  assert.deepEqual(await lease.lost, { reason: 'released', message: 'released', holder: undefined });
  assert.ok(lease.signal.aborted);
  assert.equal(lease.signal.reason.code, 'lost');
  // Released: the next one takes it at once, with a higher token.
  const next = await client.acquire('nightly', { ttl: 3000, wait: 0 });
  assert.ok(next.token > lease.token);
  await next.release();
  await next.release(); // twice: nothing more
  await client.close();
});

test('a wait that runs out rejects with code timeout and names the holder', async () => {
  const options = await s3Options('timeout');
  const [one, two] = [await Client.connect(options), await Client.connect(options)];
  const held = await one.acquire('job', { ttl: 10_000, holder: 'the-first' });
  const started = Date.now();
  const refused = await two.acquire('job', { ttl: 10_000, wait: 300 }).catch((e) => e);
  assert.ok(refused instanceof S3LeaseError, String(refused));
  assert.equal(refused.code, 'timeout');
  assert.equal(refused.holder.holder, 'the-first');
  assert.equal(refused.holder.token, held.token);
  assert.ok(Date.now() - started >= 250);
  const once = await two.acquire('job', { wait: 0 }).catch((e) => e);
  assert.equal(once.code, 'timeout');
  await held.release();
  await Promise.all([one.close(), two.close()]);
});

test('an AbortSignal gives a wait up, leaving nothing held', async () => {
  const options = await s3Options('abort');
  const [one, two] = [await Client.connect(options), await Client.connect(options)];
  const held = await one.acquire('job', { ttl: 10_000 });
  const controller = new AbortController();
  const waiting = two.acquire('job', { ttl: 10_000, wait: 60_000, signal: controller.signal });
  setTimeout(() => controller.abort(new Error('shutting down')), 200);
  await assert.rejects(waiting, /shutting down/);
  await assert.rejects(two.acquire('job', { signal: AbortSignal.abort() }), { name: 'AbortError' });
  await held.release();
  // The given-up wait left nothing behind: nobody holds the key now.
  assert.equal((await two.status('job')).live, false);
  const after = await two.acquire('job', { ttl: 10_000, wait: 0 });
  await after.release();
  await Promise.all([one.close(), two.close()]);
});

test('one AbortSignal shared by many waits: one listener, no warning, every wait given up', async () => {
  const options = await s3Options('abort-many');
  const [one, two] = [await Client.connect(options), await Client.connect(options)];
  const held = await one.acquire('job', { ttl: 10_000 });
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  const controller = new AbortController();
  const waits = Array.from({ length: 12 }, () =>
    two.acquire('job', { ttl: 10_000, wait: 60_000, signal: controller.signal }).catch((e) => e),
  );
  assert.equal(getEventListeners(controller.signal, 'abort').length, 1);
  await sleep(200);
  controller.abort(new Error('shutting down'));
  for (const e of await Promise.all(waits)) assert.match(e.message, /shutting down/);
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  // A signal that is never aborted is let go of as each wait ends.
  const quiet = new AbortController();
  const got = await Promise.all([
    two.acquire('other', { ttl: 10_000, signal: quiet.signal }),
    two.acquire('third', { ttl: 10_000, signal: quiet.signal }),
  ]);
  assert.equal(getEventListeners(quiet.signal, 'abort').length, 0);
  await new Promise((resolve) => setImmediate(resolve));
  process.off('warning', onWarning);
  assert.deepEqual(warnings.map((w) => w.name), []);
  await Promise.all([held.release(), ...got.map((l) => l.release())]);
  await Promise.all([one.close(), two.close()]);
});

test('a fenced write with a stale token is refused by the store', async () => {
  const options = await s3Options('fenced');
  const [one, two] = [await Client.connect(options), await Client.connect(options)];
  // Two slots: both held at once, the second with the higher token.
  const older = await one.acquire('pool', { ttl: 10_000, limit: 2 });
  const newer = await two.acquire('pool', { ttl: 10_000, limit: 2 });
  assert.ok(newer.token > older.token);
  const first = await older.fencedPut('data/report.json', '{"v":"old"}', 'application/json');
  assert.equal(first.previousToken, null);
  const second = await newer.fencedPut('data/report.json', Buffer.from('new'), 'text/plain');
  assert.equal(second.previousToken, older.token);
  const refused = await older.fencedPut('data/report.json', 'stale').catch((e) => e);
  assert.ok(refused instanceof S3LeaseError, String(refused));
  assert.equal(refused.code, 'fenced');
  assert.equal(refused.storedToken, newer.token);
  assert.equal(refused.ourToken, older.token);
  const found = await one.fencedGet('data/report.json');
  assert.equal(found.body.toString(), 'new');
  assert.equal(found.token, newer.token);
  assert.equal(found.contentType, 'text/plain');
  await newer.fencedDelete('data/report.json');
  assert.equal(await one.fencedGet('data/report.json'), null);
  const slots = await one.slots('pool');
  assert.equal(slots.limit, 2);
  assert.equal(slots.holders.length, 2);
  await older.release();
  await newer.release();
  await Promise.all([one.close(), two.close()]);
});

test("errors are S3LeaseErrors with the contract's codes and the host's messages", async () => {
  const options = await s3Options('errors');
  const missing = await Client.connect({ ...options, bucket: 'no-such-bucket-here' });
  const noBucket = await missing.status('k').catch((e) => e);
  assert.ok(noBucket instanceof S3LeaseError);
  assert.equal(noBucket.code, 'no-such-bucket');
  assert.match(noBucket.message, /no-such-bucket-here/);
  assert.equal(noBucket.bucket, 'no-such-bucket-here');
  assert.equal(noBucket.status, 404);
  const wrong = await Client.connect({
    ...options,
    credentials: { ...options.credentials, secretAccessKey: 'not-the-secret-123' },
  });
  const denied = await wrong.status('k').catch((e) => e);
  assert.equal(denied.code, 'access-denied');
  assert.ok(!denied.message.includes('not-the-secret-123'));
  assert.equal(denied.transient, false);
  const badConfig = await Client.connect({ ...options, addressing: 'sideways' }).catch((e) => e);
  assert.equal(badConfig.code, 'invalid-config');
  assert.equal(badConfig.field, 'S3LEASE_ADDRESSING');
  const client = await Client.connect(options);
  const badTtl = await client.acquire('k', { ttl: 0 }).catch((e) => e);
  assert.equal(badTtl.code, 'invalid-argument');
  await assert.rejects(client.acquire('k', { ttl: -1 }), TypeError);
  const gone = await client.acquire('k', { ttl: 5000 });
  await gone.release();
  const afterRelease = await gone.fencedPut('x', 'y').catch((e) => e);
  assert.equal(afterRelease.code, 'lost');
  await Promise.all([missing.close(), wrong.close(), client.close()]);
});

test('credentials from a provider function are fetched again before they expire', async () => {
  const options = await s3Options('provider');
  const keys = options.credentials;
  let calls = 0;
  const provider = async () => {
    calls += 1;
    // Four seconds to live: due a second before (a quarter of its life).
    return { ...keys, expiration: new Date(Date.now() + 4000) };
  };
  const client = await Client.connect({ ...options, credentials: provider });
  assert.equal(calls, 1);
  const lease = await client.acquire('k', { ttl: 10_000 });
  await sleep(4500);
  assert.ok(calls >= 2, `called ${calls} times`);
  assert.equal(client.stats().credentialsError, null);
  assert.ok(lease.held);
  await lease.release();
  const failing = await Client.connect({
    ...options,
    credentials: async () => {
      throw new Error('no role to assume here');
    },
  }).catch((e) => e);
  assert.equal(failing.code, 'invalid-config');
  assert.equal(failing.field, 'credentials');
  assert.match(failing.message, /no role to assume here/);
  await client.close();
});

test('close releases what the client holds and grants no more', async () => {
  const options = await s3Options('close');
  const client = await Client.connect(options);
  const [a, b] = [await client.acquire('a', { ttl: 30_000 }), await client.acquire('b', { ttl: 30_000 })];
  const report = await client.close(5000);
  assert.equal(report.released, 2);
  assert.ok(report.allReleased);
  assert.equal((await a.lost).reason, 'released');
  assert.equal(b.held, false);
  const other = await Client.connect(options);
  assert.equal((await other.status('a')).live, false);
  await assert.rejects(client.acquire('c', { wait: 0 }), { code: 'host' });
  await other.close();
});

test('the package loads as CommonJS too, the same classes', () => {
  const require = createRequire(import.meta.url);
  const cjs = require('s3-lease');
  assert.equal(cjs.Client, Client);
  assert.equal(cjs.S3LeaseError, S3LeaseError);
});

test("fromEnv reads the command line's settings as the command line does", async () => {
  const options = await s3Options('from-env');
  const saved = { ...process.env };
  try {
    // S3LEASE_ENDPOINT wins over the AWS SDKs' variable (here a closed port).
    Object.assign(process.env, envOf(options), { AWS_ENDPOINT_URL: 'http://127.0.0.1:1', S3LEASE_CHECK_STORE: 'off' });
    const client = await Client.fromEnv();
    const lease = await client.acquire('k', { ttl: 10_000 });
    assert.ok(lease.held);
    await lease.release();
    await client.close();
    // A value the command line refuses is refused here too, naming its
    // variable (not read as a no).
    process.env.S3LEASE_CHECK_STORE = 'maybe';
    const refused = await Client.fromEnv().catch((e) => e);
    assert.equal(refused.code, 'invalid-config');
    assert.equal(refused.field, 'S3LEASE_CHECK_STORE');
    assert.match(refused.message, /maybe/);
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
});

test('audit: true keeps the grant log (fromEnv: S3LEASE_AUDIT), and audit(key) reads it', async () => {
  const options = await s3Options('audit');
  const logged = await Client.connect({ ...options, audit: true });
  await (await logged.acquire('logged', { ttl: 10_000, holder: 'first' })).release();
  await logged.close();
  const saved = { ...process.env };
  try {
    Object.assign(process.env, envOf(options), { S3LEASE_AUDIT: '1' });
    const fromEnv = await Client.fromEnv();
    await (await fromEnv.acquire('logged', { ttl: 10_000, holder: 'second' })).release();
    const entries = await fromEnv.audit('logged');
    assert.deepEqual(
      entries.map((e) => [e.token, e.holder, e.ended, e.backfilled]),
      [[1, 'first', 'released', false], [2, 'second', 'released', false]],
      JSON.stringify(entries),
    );
    assert.ok(entries.every((e) => e.grantedAt instanceof Date && e.endedAt instanceof Date));
    await fromEnv.close();
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
});
