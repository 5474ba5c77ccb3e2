// `await using` with the package's own types, compiled by tsc (--strict)
// for Node 20, which runs it through the helpers tsc emits (Node 24 runs
// the syntax itself). scripts/test_node.sh compiles and runs it.
import { Client, S3LeaseError, type Lease } from 's3-lease';

const client = await Client.fromEnv();
let token = 0;
{
  await using lease: Lease = await client.acquire('nightly', { ttl: 30_000 });
  token = lease.token;
  const state = await client.status('nightly');
  if (!state?.live || state.token !== token) throw new Error('not held inside the block');
}
const after = await client.status('nightly');
if (after?.live) throw new Error('still held after the block: not released by await using');
try {
  await client.acquire('nightly', { ttl: 30_000, wait: 0, holder: 'x' }).then((l) => l.release());
} catch (e) {
  if (e instanceof S3LeaseError) console.error(e.code, e.holder?.holder);
  throw e;
}
await client.close();
console.log(`await using: token ${token} released at the end of its block`);
