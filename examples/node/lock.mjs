// The s3-lease component in Node.js: jco transpiles it to JavaScript, and
// preview2-shim supplies wasi:http (real outgoing HTTP), clocks and random.
//
//   AWS_ENDPOINT_URL=http://127.0.0.1:8333 AWS_ACCESS_KEY_ID=... \
//   AWS_SECRET_ACCESS_KEY=... S3LEASE_BUCKET=locks npm start
import { lease } from "./gen/s3-lease.js";

const env = (name, fallback) => {
  const v = process.env[name] ?? fallback;
  if (v === undefined) throw new Error(`set ${name}`);
  return v;
};

// The store, with its own endpoint, place and credential; then the
// settings every store shares.
const bucket = {
  endpoint: env("AWS_ENDPOINT_URL"),
  region: env("AWS_REGION", "us-east-1"),
  bucket: env("S3LEASE_BUCKET", "s3-lease-test"),
  addressing: "path",
  credentials: {
    accessKeyId: env("AWS_ACCESS_KEY_ID"),
    secretAccessKey: env("AWS_SECRET_ACCESS_KEY"),
    sessionToken: process.env.AWS_SESSION_TOKEN,
  },
};
const config = {
  store: { tag: "s3", val: bucket },
  keyPrefix: `node-example/${Date.now()}/`,
};
// Bad input is an error to catch, never a crash of the component.
try {
  new lease.Client({ ...config, store: { tag: "s3", val: { ...bucket, bucket: "" } } });
} catch (e) {
  console.log(`a bad config fails with: ${e.payload.tag} (${e.payload.val.field})`);
}
const client = new lease.Client(config);
try {
  client.elector({ key: "leader", leaseDurationMs: 0n, renewDeadlineMs: 0n, retryPeriodMs: 0n });
} catch (e) {
  console.log(`a bad elector config fails with: ${e.payload.tag}`);
}

const options = { ttlMs: 10_000n, holderId: `node-${process.pid}`, metadata: "from Node.js" };
const held = client.tryAcquire("leader", options);
if (!held) {
  console.log("someone else leads:", client.inspect("leader"));
  process.exit(0);
}
console.log(`leading with fencing token ${held.token} (etag ${held.etag})`);
const renewed = client.renew(held);
console.log(`renewed: token ${renewed.token}, expires at ${new Date(Number(renewed.expiresAtMs)).toISOString()}`);
// A fenced write: S3 will refuse any later write by a lower token.
const stateKey = `node-example/state-${process.pid}.json`;
const body = new TextEncoder().encode(JSON.stringify({ leader: options.holderId, token: String(renewed.token) }));
const written = client.fencedPut(renewed, stateKey, body, "application/json");
const read = client.fencedGet(stateKey);
console.log(`fenced write: ${stateKey} now carries token ${written.token}; read back ${new TextDecoder().decode(read.body)}`);
client.release(renewed);
const state = client.inspect("leader");
console.log(`released: live=${state.live}, token ${state.token} kept for the next holder`);
try {
  client.renew(renewed); // the old etag is spent
} catch (e) {
  console.log(`renewing a released lease fails with: ${e.payload.tag}`);
}
