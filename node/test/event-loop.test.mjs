// The event loop stays free: a 10 ms interval keeps its gaps under 50 ms
// while 100 acquires wait on held keys and 1,000 leases renew (on the
// host's threads, not JavaScript's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from 's3-lease';
import { s3Options, sleep } from './fixtures.mjs';

test('a 10 ms interval keeps its gaps under 50 ms while 100 acquires wait and 1,000 leases renew', async () => {
  const options = await s3Options('loop');
  const holder = await Client.connect(options);
  const waiter = await Client.connect(options);
  // 1,000 leases, renewing every third of nine tenths of 6 s (~1.8 s).
  const leases = [];
  for (let i = 0; i < 1000; i += 50) {
    const batch = Array.from({ length: 50 }, (_, j) => holder.acquire(`held-${i + j}`, { ttl: 6000, wait: 0 }));
    leases.push(...(await Promise.all(batch)));
  }
  const renewedBefore = holder.stats().renewsSent;
  let last = performance.now();
  let worst = 0;
  const gaps = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 10);
  // 100 acquires waiting on keys held (each tries again as the wait says).
  const controller = new AbortController();
  const waits = Array.from({ length: 100 }, (_, i) =>
    waiter.acquire(`held-${i}`, { ttl: 6000, wait: 60_000, signal: controller.signal }).catch((e) => e),
  );
  await sleep(5000);
  clearInterval(gaps);
  controller.abort();
  const ended = await Promise.all(waits);
  const renews = holder.stats().renewsSent - renewedBefore;
  assert.ok(worst < 50, `the longest gap between ticks was ${worst.toFixed(1)} ms`);
  assert.ok(renews >= 1000, `${renews} renews in 5 s`);
  assert.ok(ended.every((e) => e instanceof Error), 'every wait was still waiting');
  assert.ok(leases.every((l) => l.held), 'every lease still held');
  const report = await holder.close(30_000);
  assert.equal(report.released, 1000);
  await waiter.close();
  console.log(`event loop: worst gap ${worst.toFixed(1)} ms; ${renews} renews in 5 s`);
});
