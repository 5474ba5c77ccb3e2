// A separate Node process for processes.test.mjs, on the store its
// environment names (Client.fromEnv, as the command line reads it).
//   turns WHO N FILE: takes the key `turns` N times, each turn recorded as
//     one JSON line in FILE (microseconds of the monotonic clock).
//   hold KEY drain|exit|wait: takes KEY, then lets the event loop run dry,
//     calls process.exit(3), or waits (to be killed).
import { appendFileSync } from 'node:fs';
import { Client } from 's3-lease';

const micros = () => Number(process.hrtime.bigint() / 1000n);
const [mode, ...args] = process.argv.slice(2);

if (mode === 'turns') {
  const [who, n, file] = [Number(args[0]), Number(args[1]), args[2]];
  const client = await Client.fromEnv();
  for (let i = 0; i < n; i += 1) {
    const sent = micros();
    const lease = await client.acquire('turns', { ttl: 5000, wait: 60_000, holder: `node-${who}` });
    const acked = micros();
    const start = acked;
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The turn ends before the release is sent: after it, someone else may hold the key.
    const end = micros();
    await lease.release();
    appendFileSync(file, `${JSON.stringify({ who, token: lease.token, sent, acked, start, end })}\n`);
  }
  await client.close();
} else if (mode === 'hold') {
  const [key, how] = args;
  const client = await Client.fromEnv();
  await client.acquire(key, { ttl: 30_000 });
  console.log('held');
  if (how === 'exit') process.exit(3);
  if (how === 'wait') setInterval(() => {}, 1000);
}
