import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { BlobServiceClient, ContainerClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { AZURE_EMULATOR_ACCOUNT, AZURE_EMULATOR_KEY, AzureBackend } from '../src/engine/storage/azure-backend';
import { StorageProfile } from '../src/platform/config/storage-profile';
import { Azurite, startAzurite } from './helpers/azurite';

/**
 * AzureBackend against a real Azure Blob API (Azurite, in memory): listing, reading and deleting what the Lance engine
 * itself wrote under az://container/prefix, prefix boundaries, and probe for a missing container or a wrong key.
 */
describe('Azure object backend (Azurite)', () => {
  let azurite: Azurite;
  let container: ContainerClient;
  const savedUrl = process.env.AZURITE_BLOB_STORAGE_URL;

  const profile = (bucket: string, options: Record<string, string>): StorageProfile => ({
    name: 'az',
    scheme: 'az',
    root: `az://${bucket}/root/pfx`,
    bucket,
    prefix: 'root/pfx',
    options,
    vend: false,
  });
  /** As an operator with Azurite would configure it: the emulator flag, the URL in AZURITE_BLOB_STORAGE_URL. */
  const emulator = { azure_storage_use_emulator: 'true', azure_storage_account_name: AZURE_EMULATOR_ACCOUNT };
  /** The same store through an explicit endpoint and key (how a real account with a custom endpoint is set). */
  const explicit = (): Record<string, string> => ({
    account_name: AZURE_EMULATOR_ACCOUNT,
    account_key: AZURE_EMULATOR_KEY,
    endpoint: `${azurite.url}/${AZURE_EMULATOR_ACCOUNT}`,
    allow_http: 'true',
  });
  const put = (name: string, body: string) => container.getBlockBlobClient(name).upload(body, Buffer.byteLength(body));
  const names = async (prefix: string): Promise<string[]> => {
    const out: string[] = [];
    for await (const b of container.listBlobsFlat({ prefix })) out.push(b.name);
    return out;
  };

  before(async () => {
    azurite = await startAzurite();
    process.env.AZURITE_BLOB_STORAGE_URL = azurite.url;
    const svc = new BlobServiceClient(
      `${azurite.url}/${AZURE_EMULATOR_ACCOUNT}`,
      new StorageSharedKeyCredential(AZURE_EMULATOR_ACCOUNT, AZURE_EMULATOR_KEY),
    );
    container = svc.getContainerClient('lance');
    await container.create();
  });

  after(async () => {
    if (savedUrl === undefined) delete process.env.AZURITE_BLOB_STORAGE_URL;
    else process.env.AZURITE_BLOB_STORAGE_URL = savedUrl;
    await azurite?.stop();
  });

  test('probe: answers for the container, names a missing container and a wrong key without the key', async () => {
    await new AzureBackend(profile('lance', emulator)).probe();
    await new AzureBackend(profile('lance', explicit())).probe();
    await assert.rejects(new AzureBackend(profile('missing', emulator)).probe(), /^Error: az:\/\/missing: ContainerNotFound \(HTTP 404\)/);
    const wrongKey = Buffer.from('not the key of this account, 32+ bytes long').toString('base64');
    await assert.rejects(
      new AzureBackend(profile('lance', { ...explicit(), account_key: wrongKey })).probe(),
      (err: Error) => /^az:\/\/lance: \w+ \(HTTP 403\)/.test(err.message) && !err.message.includes(wrongKey),
    );
  });

  test('what the engine writes under az://container/prefix is listed, measured and read', async () => {
    const db = await lancedb.connect('az://lance/root/pfx/db1', { storageOptions: emulator });
    const t = await db.createTable('t1', [
      { id: 1, v: 'a' },
      { id: 2, v: 'b' },
    ]);
    await t.add([{ id: 3, v: 'c' }]);
    assert.equal(await t.countRows(), 3);
    t.close();
    db.close();

    const backend = new AzureBackend(profile('lance', emulator));
    const listed = await backend.listRecursive('db1/t1.lance');
    const inStore = await names('root/pfx/db1/t1.lance/');
    assert.deepEqual(
      listed.map((o) => o.key),
      inStore.map((n) => n.slice('root/pfx/'.length)).sort(),
      'every blob the engine wrote, keyed relative to the root',
    );
    assert.ok(
      listed.some((o) => /^db1\/t1\.lance\/_versions\/.+\.manifest$/.test(o.key)),
      'the manifests',
    );
    assert.ok(listed.filter((o) => /^db1\/t1\.lance\/data\/.+\.lance$/.test(o.key)).length >= 2, 'a data file per write');
    assert.ok(listed.every((o) => o.size > 0 && o.modifiedMs > 0));
    assert.equal(await backend.exists('db1/t1.lance'), true);
    assert.equal(await backend.exists('db1/t1'), false, 'a key prefix that is not a folder');
    assert.equal(await backend.exists('db1/t2.lance'), false);

    const manifest = listed.find((o) => o.key.endsWith('.manifest'))!;
    const bytes = await backend.read(manifest.key);
    assert.equal(bytes.length, manifest.size);
    assert.equal(backend.objectPath(manifest.key), `root/pfx/${manifest.key}`);
    // The explicit-endpoint configuration sees the same store.
    assert.deepEqual(await new AzureBackend(profile('lance', explicit())).listRecursive('db1/t1.lance'), listed);
  });

  test('a folder that is also an object is listed with it; neighbours sharing the name prefix are not', async () => {
    await put('root/pfx/solo', 'x');
    await put('root/pfx/solo/child', 'yy');
    await put('root/pfx/solo-sibling', 'zzz');
    await put('outside/solo/child', 'no');
    const backend = new AzureBackend(profile('lance', explicit()));
    assert.deepEqual(
      (await backend.listRecursive('solo')).map((o) => [o.key, o.size]),
      [
        ['solo', 1],
        ['solo/child', 2],
      ],
    );
    assert.deepEqual(await backend.listRecursive('absent'), []);
    await backend.removeObject('solo');
    await backend.removeObject('solo'); // absent is fine
    assert.deepEqual(await names('root/pfx/solo'), ['root/pfx/solo-sibling', 'root/pfx/solo/child']);
  });

  test('removeFolder deletes everything under the folder and nothing beside it', async () => {
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => put(`root/pfx/db2/t.lance/data/${String(i).padStart(2, '0')}.lance`, `row ${i}`)),
    );
    await put('root/pfx/db20/keep', 'k');
    await put('root/pfx/db2', 'object named like the folder');
    const backend = new AzureBackend(profile('lance', emulator));
    assert.equal((await backend.listRecursive('db2')).length, 41);
    await backend.removeFolder('db2');
    assert.deepEqual(await names('root/pfx/db2'), ['root/pfx/db2', 'root/pfx/db20/keep']);
    assert.equal(await backend.exists('db2'), false);
    await backend.removeFolder('db2'); // nothing there is fine
    await assert.rejects(backend.removeFolder(''), /whole storage root/);
    assert.equal((await names('')).length > 0, true);
  });

  test('a table the backend removed is gone for the engine too', async () => {
    const backend = new AzureBackend(profile('lance', emulator));
    await backend.removeFolder('db1');
    assert.deepEqual(await names('root/pfx/db1/'), []);
    const db = await lancedb.connect('az://lance/root/pfx/db1', { storageOptions: emulator });
    assert.deepEqual(await db.tableNames(), []);
    await assert.rejects(db.openTable('t1'));
    db.close();
  });
});

describe('a gateway with STORAGE_ROOT=az://… (Azurite)', () => {
  let azurite: Azurite;
  let container: ContainerClient;

  before(async () => {
    azurite = await startAzurite();
    const svc = new BlobServiceClient(
      `${azurite.url}/${AZURE_EMULATOR_ACCOUNT}`,
      new StorageSharedKeyCredential(AZURE_EMULATOR_ACCOUNT, AZURE_EMULATOR_KEY),
    );
    container = svc.getContainerClient('tables');
    await container.create();
  });
  after(async () => {
    await azurite?.stop();
  });

  test('creates, appends, queries and drops a table through the remote client; blobs appear and go', async () => {
    const { startGateway, newTenant, eventually } = await import('./helpers/gateway');
    const options = {
      azure_storage_account_name: AZURE_EMULATOR_ACCOUNT,
      azure_storage_account_key: AZURE_EMULATOR_KEY,
      azure_storage_endpoint: `${azurite.url}/${AZURE_EMULATOR_ACCOUNT}`,
      allow_http: 'true',
    };
    const gw = await startGateway('embedded', { STORAGE_ROOT: 'az://tables/gw', STORAGE_OPTIONS: JSON.stringify(options) });
    try {
      const ready = await fetch(`${gw.url}/readyz`);
      assert.equal(ready.status, 200, await ready.text());
      const t = await newTenant(gw);
      const remote = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: gw.url });
      const table = await remote.createTable('az_rows', [
        { id: 1, v: [1, 2] },
        { id: 2, v: [3, 4] },
      ]);
      await table.add([{ id: 3, v: [5, 6] }]);
      assert.equal(await table.countRows(), 3);
      const blobs = async () => {
        const out: string[] = [];
        for await (const b of container.listBlobsFlat({ prefix: `gw/${t.name}/` })) out.push(b.name);
        return out;
      };
      assert.ok((await blobs()).some((n) => /_versions\/\d+\.manifest$/.test(n)));
      const described = await t.api.post('/v1/table/az_rows/describe', {});
      assert.match(described.body.location, new RegExp(`^az://tables/gw/${t.name}/[0-9a-f-]+\\.lance$`));
      await remote.dropTable('az_rows');
      await eventually(async () => (await blobs()).length === 0);
      remote.close();
    } finally {
      await gw.close();
    }
  });
});
