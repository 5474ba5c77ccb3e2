// Processes: taking turns on one key (judged by the project's history
// checker), sharing a key with the `s3-lease` command line, and what
// becomes of held leases when a process or a worker thread ends without
// releasing them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Client } from 's3-lease';
import { cliBin, envOf, judgeTurns, s3Options } from './fixtures.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const child = path.join(here, 'child.mjs');

/** Runs child.mjs `args` with `env` added; resolves with its exit and output. */
function run(args, env, { onLine } = {}) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [child, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
      if (onLine) for (const line of String(d).split('\n').filter(Boolean)) onLine(line, p);
    });
    p.stderr.on('data', (d) => (out += d));
    p.on('exit', (code, signal) => resolve({ code, signal, out }));
  });
}

test('processes taking turns on one key never overlap, tokens rising (history checker)', async () => {
  const options = await s3Options('turns');
  const dir = mkdtempSync(path.join(tmpdir(), 's3lease-node-turns-'));
  const file = path.join(dir, 'turns.jsonl');
  writeFileSync(file, '');
  const runs = await Promise.all(
    [0, 1, 2, 3].map((who) => run(['turns', String(who), '5', file], envOf(options))),
  );
  for (const r of runs) assert.equal(r.code, 0, r.out);
  const turns = readFileSync(file, 'utf8').trim().split('\n');
  assert.equal(turns.length, 20);
  const verdict = judgeTurns(file);
  assert.ok(verdict.ok, verdict.output);
  assert.match(verdict.output, /20 turns judged, 0 violations/);
  rmSync(dir, { recursive: true, force: true });
});

test('the key is shared with the s3-lease command line', async () => {
  const options = await s3Options('cli');
  const env = { ...process.env, ...envOf(options) };
  const client = await Client.connect(options);
  const lease = await client.acquire('shared', { ttl: 10_000, holder: 'node' });
  const refused = spawnSync(cliBin, ['acquire', 'shared', '--ttl', '10s', '--wait', '0'], { env, encoding: 'utf8' });
  assert.equal(refused.status, 75, refused.stderr);
  const status = spawnSync(cliBin, ['--json', 'status', 'shared'], { env, encoding: 'utf8' });
  assert.equal(status.status, 0, status.stderr);
  assert.match(status.stdout, /"node"/);
  await lease.release();
  // The command line holds it while its command runs; Node waits its turn.
  const cli = spawn(cliBin, ['run', 'shared', '--ttl', '10s', '--', 'sleep', '1'], { env, stdio: 'ignore' });
  const cliExited = new Promise((resolve) => cli.on('exit', resolve));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const started = Date.now();
  const after = await client.acquire('shared', { ttl: 10_000, wait: 15_000 });
  assert.ok(Date.now() - started >= 200, 'waited for the command line to let go');
  assert.ok(after.token > lease.token + 0);
  assert.equal(await cliExited, 0);
  await after.release();
  await client.close();
});

async function heldAfter(options, key) {
  const other = await Client.connect(options);
  const state = await other.status(key);
  await other.close();
  return state?.live ?? false;
}

test('a process that ends without releasing releases at its exit; one killed leaves the lease to run out', async () => {
  const options = await s3Options('exit');
  const env = envOf(options);
  // The event loop runs dry with the lease held: released at exit.
  const drained = await run(['hold', 'drained', 'drain'], env);
  assert.equal(drained.code, 0, drained.out);
  assert.equal(await heldAfter(options, 'drained'), false);
  // process.exit() with the lease held: released too.
  const exited = await run(['hold', 'exited', 'exit'], env);
  assert.equal(exited.code, 3, exited.out);
  assert.equal(await heldAfter(options, 'exited'), false);
  // SIGKILL: nothing runs; live until its ttl.
  const killed = await run(['hold', 'killed', 'wait'], env, {
    onLine: (line, p) => line.startsWith('held') && p.kill('SIGKILL'),
  });
  assert.equal(killed.signal, 'SIGKILL');
  assert.equal(await heldAfter(options, 'killed'), true);
});

test('worker threads: a worker that ends or is terminated releases its leases, not the main thread\'s', async () => {
  const options = await s3Options('worker');
  const client = await Client.connect(options);
  const mine = await client.acquire('main', { ttl: 30_000 });
  for (const how of ['drain', 'terminate']) {
    const worker = new Worker(path.join(here, 'worker.mjs'), { workerData: { options, key: how } });
    await new Promise((resolve, reject) => {
      worker.on('message', (m) => m === 'held' && how === 'terminate' && worker.terminate());
      worker.on('error', reject);
      worker.on('exit', resolve);
    });
    assert.equal(await heldAfter(options, how), false, `the worker's lease (${how}) was released`);
  }
  assert.ok(mine.held);
  assert.equal(await heldAfter(options, 'main'), true);
  await mine.release();
  await client.close();
});
