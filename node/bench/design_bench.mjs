// The Node twin of scripts/design_bench.py: the package's lock and a lock
// of the single-object design written on @aws-sdk/client-s3, timed side by
// side in one run against one store, per operation: p50, p99 and this
// process's CPU (user + system, every thread) per operation.
//
//   node design_bench.mjs ROUNDS   (scripts/bench_node.sh sets it up)
//
// The store: AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, S3LEASE_TEST_BUCKET. Prints one JSON object.
import { S3Client, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Client } from 's3-lease';

const rounds = Number(process.argv[2] ?? 200);
const bucket = process.env.S3LEASE_TEST_BUCKET;
const run = `${Date.now()}`;

function summary(samples, cpuMicros) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p) => sorted[Math.round((sorted.length - 1) * p)];
  return { p50_ms: +at(0.5).toFixed(2), p99_ms: +at(0.99).toFixed(2), cpu_ms: +(cpuMicros / samples.length / 1000).toFixed(3) };
}

async function timeOps(names, round) {
  const wall = Object.fromEntries(names.map((n) => [n, []]));
  const cpu = Object.fromEntries(names.map((n) => [n, 0]));
  const timed = async (name, call) => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const out = await call();
    wall[name].push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu[name] += c.user + c.system;
    return out;
  };
  for (let i = 0; i < rounds; i += 1) await round(i, timed);
  return Object.fromEntries(names.map((n) => [n, summary(wall[n], cpu[n])]));
}

// The single-object design on the AWS SDK: one JSON lock object per key,
// taken with If-None-Match: * (or If-Match over an expired one), renewed
// and released with If-Match.
const s3 = new S3Client({ endpoint: process.env.AWS_ENDPOINT_URL, region: process.env.AWS_REGION, forcePathStyle: true });
async function read(key) {
  try {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return { etag: got.ETag, lock: JSON.parse(await got.Body.transformToString()) };
  } catch (e) {
    if (e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return null;
    throw e;
  }
}
async function write(key, lock, condition) {
  const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: JSON.stringify(lock), ...condition }));
  return put.ETag;
}
const sdk = await timeOps(['try-acquire', 'renew', 'release', 'inspect'], async (i, timed) => {
  const key = `bench-sdk/${run}/${i % 8}`;
  const ttl = 30_000;
  const { etag } = await timed('try-acquire', async () => {
    const seen = await read(key);
    const token = (seen?.lock.token ?? 0) + 1;
    const lock = { holder: 'bench', token, expires_at: Date.now() + ttl };
    const condition = seen ? { IfMatch: seen.etag } : { IfNoneMatch: '*' };
    return { etag: await write(key, lock, condition), token };
  });
  const renewed = await timed('renew', () => write(key, { holder: 'bench', token: 1, expires_at: Date.now() + ttl }, { IfMatch: etag }));
  await timed('release', () => write(key, { holder: 'bench', token: 1, expires_at: 0 }, { IfMatch: renewed }));
  await timed('inspect', () => read(key));
});

const client = await Client.connect({
  bucket,
  endpoint: process.env.AWS_ENDPOINT_URL,
  region: process.env.AWS_REGION,
  prefix: `bench-node/${run}/`,
});
const ours = await timeOps(['try-acquire', 'release', 'inspect'], async (i, timed) => {
  const key = `k${i % 8}`;
  const lease = await timed('try-acquire', () => client.acquire(key, { ttl: 30_000, wait: 0 }));
  await timed('release', () => lease.release());
  await timed('inspect', () => client.status(key));
});
await client.close();
console.log(JSON.stringify({ rounds, 's3-lease (npm)': ours, '@aws-sdk/client-s3 (single-object)': sdk }, null, 1));
