// What the tests share: the suite's servers and fault proxy and its history
// checker (host-test's package_fixtures, one process for the whole run), a
// fresh key prefix per test, and the package under test: `s3-lease` as
// installed next to these files (scripts/test_node.sh installs the packed
// tarball in a fresh directory and runs them there).
import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
/** The repository (for the workspace's binaries): S3LEASE_REPO, else this file's. */
export const repo = process.env.S3LEASE_REPO ?? path.resolve(here, '..', '..');
const target = process.env.CARGO_TARGET_DIR ?? path.join(repo, 'target');
export const fixturesBin = process.env.S3LEASE_PACKAGE_FIXTURES ?? path.join(target, 'debug', 'package_fixtures');
/** The command line, as the test build made it. */
export const cliBin = process.env.S3LEASE_CLI ?? path.join(target, 'debug', 's3-lease');

let server;
const answers = [];

function fixtures() {
  if (!server) {
    server = spawn(fixturesBin, ['serve'], { stdio: ['pipe', 'pipe', 'inherit'] });
    createInterface({ input: server.stdout }).on('line', (line) => {
      answers.shift()?.(JSON.parse(line));
      // Waiting for an answer keeps the process alive; the server alone does not.
      if (answers.length === 0) server.stdout.unref();
    });
    server.unref();
    server.stdin.unref?.();
    server.stdout.unref();
  }
  return server;
}

/** One request to the fixtures: `s3`, `proxy`, `fault ID silent`, `dynamodb`, `azure`, `gcs`. */
export function ask(request) {
  const s = fixtures();
  return new Promise((resolve, reject) => {
    answers.push((answer) => (answer.error ? reject(new Error(answer.error)) : resolve(answer)));
    s.stdout.ref();
    s.stdin.write(`${request}\n`);
  });
}

let next = 0;
/** A key prefix of its own for each test: nothing one test does is seen by another. */
export function prefix(hint) {
  next += 1;
  return `node-${hint}-${process.pid}-${next}-${Date.now()}/`;
}

/** Connect options for the shared SeaweedFS, keys under `prefix`. */
export async function s3Options(hint, extra = {}) {
  const s3 = await ask('s3');
  return {
    bucket: s3.bucket,
    endpoint: s3.url,
    region: s3.region,
    credentials: { accessKeyId: s3.access_key_id, secretAccessKey: s3.secret_access_key },
    prefix: prefix(hint),
    ...extra,
  };
}

/** The same store as `options`, as environment variables (for fromEnv, the command line, children). */
export function envOf(options) {
  return {
    S3LEASE_BUCKET: options.bucket,
    S3LEASE_ENDPOINT: options.endpoint,
    S3LEASE_REGION: options.region,
    S3LEASE_PREFIX: options.prefix,
    AWS_ACCESS_KEY_ID: options.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: options.credentials.secretAccessKey,
  };
}

/** Microseconds of the machine's monotonic clock (comparable across processes). */
export function micros() {
  return Number(process.hrtime.bigint() / 1000n);
}

/** The history checker's verdict on turns recorded in `file` (JSON lines). */
export function judgeTurns(file) {
  const run = spawnSync(fixturesBin, ['turns', file], { encoding: 'utf8' });
  return { ok: run.status === 0, output: `${run.stdout}${run.stderr}` };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
