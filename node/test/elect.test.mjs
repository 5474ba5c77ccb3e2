// Leader election: one leads, the other follows; resigning hands over.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from 's3-lease';
import { s3Options } from './fixtures.mjs';

test('two electors: one leads, and when it resigns the other does', async () => {
  const options = await s3Options('elect');
  const [one, two] = [await Client.connect(options), await Client.connect(options)];
  const timing = { leaseDuration: 3000, renewDeadline: 2000, retryPeriod: 300 };
  const first = await one.elect('leader', { ...timing, holder: 'first' });
  const elected = await new Promise((resolve) => first.once('elected', resolve));
  assert.equal(first.role, 'leader');
  assert.ok(first.isLeader);
  assert.equal(first.lease.token, elected.token);
  const second = await two.elect('leader', { ...timing, holder: 'second' });
  const seen = await new Promise((resolve) => second.once('leader', resolve));
  assert.equal(seen.holder, 'first');
  assert.equal(second.role, 'follower');
  const refused = await second.fencedPut('leader-data', 'not the leader').catch((e) => e);
  assert.equal(refused.code, 'lost');
  await first.fencedPut('leader-data', 'from the leader');
  await first.resign();
  assert.equal(first.role, 'candidate');
  // The async iterator: the second one's events until it is elected.
  for await (const event of second) {
    if (event.type === 'elected') {
      assert.ok(event.lease.token > elected.token);
      break;
    }
  }
  assert.equal(second.role, 'leader');
  const written = await second.fencedPut('leader-data', 'from the next leader');
  assert.equal(written.previousToken, elected.token);
  await second.resign();
  // The first's iterator has its whole story, then ends.
  const story = [];
  for await (const event of first) story.push(event.type === 'stopped' ? `stopped:${event.reason}` : event.type);
  assert.ok(story.includes('elected'), story.join(' '));
  assert.ok(story.includes('stopped:resigned'), story.join(' '));
  await Promise.all([one.close(), two.close()]);
});
