// One smoke each on the other stores: dynalite (DynamoDB), Azurite (Azure
// Blob Storage) and fake-gcs-server (Google Cloud Storage).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from 's3-lease';
import { ask, prefix } from './fixtures.mjs';

async function smoke(options, storeName) {
  const client = await Client.connect({ ...options, prefix: prefix(storeName.replaceAll(' ', '-')) });
  assert.equal(client.storeName, storeName);
  const lease = await client.acquire('smoke', { ttl: 5000 });
  assert.ok(lease.token >= 1);
  // Fenced writes keep data in a bucket or container: not on DynamoDB.
  if (storeName !== 'DynamoDB') {
    const written = await lease.fencedPut('smoke-data', 'hello', 'text/plain');
    assert.equal(written.token, lease.token);
    assert.equal((await client.fencedGet('smoke-data')).body.toString(), 'hello');
  }
  const waited = await client.acquire('smoke', { ttl: 5000, wait: 0 }).catch((e) => e);
  assert.equal(waited.code, 'timeout');
  await lease.release();
  const next = await client.acquire('smoke', { ttl: 5000, wait: 0 });
  assert.ok(next.token > lease.token);
  await next.release();
  await client.close();
}

test('dynalite (DynamoDB)', async () => {
  const d = await ask('dynamodb');
  await smoke(
    {
      store: 'dynamodb',
      table: d.table,
      endpoint: d.url,
      region: d.region,
      credentials: { accessKeyId: d.access_key_id, secretAccessKey: d.secret_access_key },
    },
    'DynamoDB',
  );
});

test('Azurite (Azure Blob Storage)', async () => {
  const a = await ask('azure');
  await smoke({ store: 'azure-blob', container: a.container, connectionString: a.connection_string }, 'Azure Blob Storage');
});

test('fake-gcs-server (Google Cloud Storage)', async () => {
  const g = await ask('gcs');
  // Its emulator takes no credential; renewing faster than a second is refused on GCS.
  await smoke({ store: 'gcs', bucket: g.bucket, endpoint: g.url }, 'Google Cloud Storage');
});
