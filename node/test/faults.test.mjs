// A lease lost for real: the network between the client and the store goes
// silent (the suite's fault proxy), renews hang, and the lease ends at its
// safe margin: `lost` resolves, `signal` aborts, the next call rejects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, S3LeaseError } from 's3-lease';
import { ask, s3Options } from './fixtures.mjs';

test('a lease lost behind a silent network: lost resolves, signal aborts, the next call rejects', async () => {
  const proxy = await ask('proxy');
  const direct = await s3Options('lost');
  const client = await Client.connect({ ...direct, endpoint: proxy.url, requestTimeout: 20_000 });
  const lease = await client.acquire('job', { ttl: 3000 });
  const aborted = new Promise((resolve) => lease.signal.addEventListener('abort', resolve));
  await ask(`fault ${proxy.id} silent`);
  const cutAt = Date.now();
  // A held lease does not keep the process alive (docs/node.md): this
  // test's own timer does, while it waits for the loss.
  const alive = setInterval(() => {}, 1000);
  const end = await lease.lost;
  clearInterval(alive);
  const after = Date.now() - cutAt;
  assert.equal(end.reason, 'expired');
  // At its safe margin (nine tenths of the ttl after the last renew was
  // sent), while the renew still hangs: not later than the ttl.
  assert.ok(after <= 3000, `lost ${after} ms after the cut`);
  await aborted;
  assert.ok(lease.signal.aborted);
  assert.ok(lease.signal.reason instanceof S3LeaseError);
  assert.equal(lease.signal.reason.code, 'lost');
  assert.equal(lease.held, false);
  const refused = await lease.fencedPut('data', 'late').catch((e) => e);
  assert.equal(refused.code, 'lost');
  assert.throws(() => lease.heldToken(), { code: 'lost' });
  // Another client, straight to the store, takes the key once it expired.
  const other = await Client.connect(direct);
  const next = await other.acquire('job', { ttl: 3000, wait: 10_000 });
  assert.ok(next.token > lease.token);
  await ask(`fault ${proxy.id} pass`);
  await next.release();
  await lease.release(); // over already: nothing to send
  await Promise.all([client.close(1000), other.close()]);
});
