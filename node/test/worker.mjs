// A worker thread for processes.test.mjs: takes a key and then ends (its
// event loop runs dry) or waits to be terminated.
import { parentPort, workerData } from 'node:worker_threads';
import { Client } from 's3-lease';

const client = await Client.connect(workerData.options);
await client.acquire(workerData.key, { ttl: 30_000 });
parentPort.postMessage('held');
if (workerData.key === 'terminate') setInterval(() => {}, 1000);
