import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { AZURE_EMULATOR_ACCOUNT, AZURE_EMULATOR_KEY, AzureBackend, azureClientConfig } from '../../src/engine/storage/azure-backend';
import { GcsBackend, gcsClientConfig } from '../../src/engine/storage/gcs-backend';
import { LocalBackend } from '../../src/engine/storage/local-backend';
import { StorageProfile } from '../../src/platform/config/storage-profile';
import { resolveOptions, shortError, truthy } from '../../src/engine/storage/store-options';

/** Lance storage options (and the environment) → the GCS and Azure SDK settings, decided as the engine decides. */
const SECRET = 'do-not-print-this-secret';
const noFile = (): string => {
  throw Object.assign(new Error('nope'), { code: 'ENOENT' });
};

describe('reading Lance storage options', () => {
  test('aliases and case are one key; the profile wins over the environment; blanks are unset', () => {
    const keys = { name: ['azure_storage_account_name', 'account_name'], key: ['azure_storage_account_key', 'account_key'] } as const;
    assert.deepEqual(
      resolveOptions(keys, { Account_Name: 'a' }, { AZURE_STORAGE_ACCOUNT_NAME: 'env', AZURE_STORAGE_ACCOUNT_KEY: 'k' }, 'AZURE_'),
      { name: 'a', key: 'k' },
    );
    assert.deepEqual(resolveOptions(keys, { account_name: '' }, { AZURE_STORAGE_ACCOUNT_NAME: 'env' }, 'AZURE_'), { name: 'env' });
    // Only variables with the store's prefix are read, and only by their full key names.
    assert.deepEqual(resolveOptions(keys, {}, { ACCOUNT_NAME: 'x', AZURE_ACCOUNT_NAME: 'y' }, 'AZURE_'), {});
  });

  test('booleans as object_store spells them', () => {
    for (const v of ['1', 'true', 'TRUE', 'on', 'yes', 'y']) assert.equal(truthy(v, 'k'), true, v);
    for (const v of ['0', 'false', 'off', 'no', 'n']) assert.equal(truthy(v, 'k'), false, v);
    assert.equal(truthy(undefined, 'k'), false);
    assert.throws(() => truthy('maybe', 'use_emulator'), /use_emulator: must be true or false/);
  });

  test('store errors become one line without query strings', () => {
    const msg = shortError(
      Object.assign(new Error(`Denied for https://a.blob.core.windows.net/c?sv=1&sig=${SECRET}\nRequestId:1`), {
        code: 'AuthFailed',
        statusCode: 403,
      }),
    );
    assert.equal(msg, 'AuthFailed (HTTP 403): Denied for https://a.blob.core.windows.net/c?…');
    const gcs = Object.assign(new Error('The specified bucket does not exist.'), { code: 404, errors: [{ reason: 'notFound' }] });
    assert.equal(shortError(gcs), 'notFound (HTTP 404): The specified bucket does not exist.');
    assert.equal(
      shortError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })),
      'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1',
    );
  });
});

describe('Azure options → client settings', () => {
  test('account name and key, default endpoint; the key never reaches the URL', () => {
    const c = azureClientConfig({ azure_storage_account_name: 'acct', azure_storage_account_key: SECRET }, {});
    assert.deepEqual(c, {
      accountUrl: 'https://acct.blob.core.windows.net',
      account: 'acct',
      emulator: false,
      auth: { kind: 'shared_key', accountName: 'acct', accountKey: SECRET },
    });
  });

  test('short aliases, an explicit endpoint (trailing slash dropped) and the fabric endpoint', () => {
    const c = azureClientConfig({ account_name: 'acct', access_key: 'k', endpoint: 'http://10.0.0.5:10000/acct/' }, {});
    assert.equal(c.accountUrl, 'http://10.0.0.5:10000/acct');
    assert.equal(
      azureClientConfig({ account_name: 'acct', account_key: 'k', use_fabric_endpoint: 'true' }, {}).accountUrl,
      'https://acct.blob.fabric.microsoft.com',
    );
    assert.throws(
      () => azureClientConfig({ account_name: 'acct', account_key: 'k', endpoint: 'ftp://x' }, {}),
      /azure_storage_endpoint: must be an http\(s\) URL/,
    );
  });

  test('credentials in the engine order: bearer token, then account key, then SAS', () => {
    assert.deepEqual(azureClientConfig({ account_name: 'a', account_key: 'k', sas_token: 's', token: 't' }, {}).auth, {
      kind: 'bearer',
      token: 't',
    });
    assert.deepEqual(azureClientConfig({ account_name: 'a', account_key: 'k', sas_token: 's' }, {}).auth, {
      kind: 'shared_key',
      accountName: 'a',
      accountKey: 'k',
    });
    assert.deepEqual(azureClientConfig({ account_name: 'a', azure_storage_sas_key: '?sv=1&sig=x' }, {}).auth, {
      kind: 'sas',
      sas: '?sv=1&sig=x',
    });
    assert.deepEqual(azureClientConfig({ account_name: 'a', account_key: 'k', skip_signature: 'true' }, {}).auth, { kind: 'anonymous' });
  });

  test('the standard AZURE_* variables fill what the options leave out', () => {
    const env = { AZURE_STORAGE_ACCOUNT_NAME: 'envacct', AZURE_STORAGE_ACCOUNT_KEY: 'envkey', AZURE_STORAGE_SAS_TOKEN: 'envsas' };
    assert.deepEqual(azureClientConfig({}, env), {
      accountUrl: 'https://envacct.blob.core.windows.net',
      account: 'envacct',
      emulator: false,
      auth: { kind: 'shared_key', accountName: 'envacct', accountKey: 'envkey' },
    });
    const mixed = azureClientConfig({ account_name: 'optacct' }, env);
    assert.equal(mixed.account, 'optacct');
    assert.deepEqual(mixed.auth, { kind: 'shared_key', accountName: 'optacct', accountKey: 'envkey' });
  });

  test('the emulator: well-known account and key at AZURITE_BLOB_STORAGE_URL or 127.0.0.1:10000', () => {
    assert.deepEqual(azureClientConfig({ azure_storage_use_emulator: 'true' }, {}), {
      accountUrl: `http://127.0.0.1:10000/${AZURE_EMULATOR_ACCOUNT}`,
      account: AZURE_EMULATOR_ACCOUNT,
      emulator: true,
      auth: { kind: 'shared_key', accountName: AZURE_EMULATOR_ACCOUNT, accountKey: AZURE_EMULATOR_KEY },
    });
    const c = azureClientConfig(
      { use_emulator: 'yes', account_name: 'other', account_key: 'k2' },
      { AZURITE_BLOB_STORAGE_URL: 'http://azurite:10000/' },
    );
    assert.equal(c.accountUrl, 'http://azurite:10000/other');
    assert.deepEqual(c.auth, { kind: 'shared_key', accountName: 'other', accountKey: 'k2' });
    assert.equal(azureClientConfig({}, { AZURE_STORAGE_USE_EMULATOR: 'true' }).emulator, true);
  });

  test('mistakes name the key and never a value', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ account_key: SECRET }, /azure_storage_account_name/],
      [{ account_name: 'a' }, /no Azure credential the gateway can use/],
      [{ account_name: 'a', client_id: 'c', tenant_id: 't', client_secret: SECRET }, /service principals/],
      [{ account_name: 'a', account_key: SECRET, use_emulator: SECRET }, /azure_storage_use_emulator: must be true or false/],
      [{ account_name: 'a', account_key: 'k', endpoint: `not a url ${SECRET}` }, /azure_storage_endpoint: not a URL/],
    ];
    for (const [opts, re] of cases) {
      assert.throws(
        () => azureClientConfig(opts, {}),
        (err: Error) => re.test(err.message) && !err.message.includes(SECRET),
      );
    }
  });
});

describe('GCS options → client settings', () => {
  const KEY = { type: 'service_account', project_id: 'proj', client_email: 'sa@proj.iam.gserviceaccount.com', private_key: SECRET };

  test('a service account key (JSON) becomes the credentials and the project', () => {
    const c = gcsClientConfig({ google_service_account_key: JSON.stringify(KEY) }, {}, noFile);
    assert.deepEqual(c.credentials, KEY);
    assert.equal(c.projectId, 'proj');
    assert.equal(c.apiEndpoint, undefined, 'the default endpoint');
    assert.equal(c.keyFilename, undefined);
  });

  test('a service account file is read (as object_store reads it)', () => {
    const read: string[] = [];
    const c = gcsClientConfig({ service_account: '/keys/sa.json' }, {}, (p) => {
      read.push(p);
      return JSON.stringify(KEY);
    });
    assert.deepEqual(read, ['/keys/sa.json']);
    assert.deepEqual(c.credentials, KEY);
  });

  test("an emulator's service account: gcs_base_url sets the endpoint, disable_oauth sends no token", () => {
    const c = gcsClientConfig(
      {
        service_account_key: JSON.stringify({
          gcs_base_url: 'http://127.0.0.1:4443/',
          disable_oauth: true,
          client_email: '',
          private_key: '',
        }),
      },
      {},
      noFile,
    );
    assert.equal(c.apiEndpoint, 'http://127.0.0.1:4443');
    assert.equal(c.useAuthWithCustomEndpoint, false);
    assert.equal(c.credentials, undefined);
    const authed = gcsClientConfig(
      { google_service_account_key: JSON.stringify(KEY), google_base_url: 'https://gcs.internal' },
      {},
      noFile,
    );
    assert.equal(authed.apiEndpoint, 'https://gcs.internal');
    assert.equal(authed.useAuthWithCustomEndpoint, true, 'a custom endpoint with real credentials still authenticates, as the engine does');
  });

  test('application credentials: the option, else GOOGLE_APPLICATION_CREDENTIALS, else the library default chain', () => {
    assert.equal(
      gcsClientConfig({ google_application_credentials: '/adc.json' }, { GOOGLE_APPLICATION_CREDENTIALS: '/env.json' }, noFile).keyFilename,
      '/adc.json',
    );
    assert.equal(gcsClientConfig({}, { GOOGLE_APPLICATION_CREDENTIALS: '/env.json' }, noFile).keyFilename, '/env.json');
    const none = gcsClientConfig({}, {}, noFile);
    assert.equal(none.keyFilename, undefined);
    assert.equal(none.credentials, undefined);
  });

  test('the environment: GOOGLE_SERVICE_ACCOUNT_KEY, GOOGLE_SERVICE_ACCOUNT, SERVICE_ACCOUNT; options win as a whole', () => {
    assert.deepEqual(gcsClientConfig({}, { GOOGLE_SERVICE_ACCOUNT_KEY: JSON.stringify(KEY) }, noFile).credentials, KEY);
    const paths: string[] = [];
    const reader = (p: string): string => {
      paths.push(p);
      return JSON.stringify(KEY);
    };
    gcsClientConfig({}, { SERVICE_ACCOUNT: '/plain.json' }, reader);
    gcsClientConfig({}, { SERVICE_ACCOUNT: '/plain.json', GOOGLE_SERVICE_ACCOUNT: '/google.json' }, reader);
    // A key in the options is used even though the environment names a file (no "both" error from a mix of sources).
    gcsClientConfig({ service_account_key: JSON.stringify(KEY) }, { GOOGLE_SERVICE_ACCOUNT: '/google.json' }, reader);
    assert.deepEqual(paths, ['/plain.json', '/google.json']);
  });

  test('mistakes name the key and never a value', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ google_service_account_key: `{"private_key": "${SECRET}"` }, /google_service_account_key: not valid JSON/],
      [{ google_service_account_key: '"just a string"' }, /must be a JSON object/],
      [{ google_service_account: '/missing.json' }, /google_service_account: cannot read the file \(ENOENT\)/],
      [{ google_service_account: '/a.json', google_service_account_key: JSON.stringify(KEY) }, /not both/],
      [{ google_base_url: `nope ${SECRET}` }, /google_base_url \/ gcs_base_url: not a URL/],
    ];
    for (const [opts, re] of cases) {
      assert.throws(
        () => gcsClientConfig(opts, {}, noFile),
        (err: Error) => re.test(err.message) && !err.message.includes(SECRET),
      );
    }
  });
});

describe('a misconfigured profile', () => {
  const profile = (scheme: 'gs' | 'az', options: Record<string, string>): StorageProfile => ({
    name: 'p',
    scheme,
    root: `${scheme}://bkt/pre`,
    bucket: 'bkt',
    prefix: 'pre',
    options,
    vend: false,
  });

  test('is reported by probe and every operation, not thrown at construction', async () => {
    const az = new AzureBackend(profile('az', { account_key: SECRET }));
    await assert.rejects(
      az.probe(),
      (err: Error) => /^az:\/\/bkt: azure_storage_account_name/.test(err.message) && !err.message.includes(SECRET),
    );
    await assert.rejects(az.listRecursive('t.lance'), /azure_storage_account_name/);
    const gs = new GcsBackend(profile('gs', { google_service_account_key: `{${SECRET}` }));
    await assert.rejects(
      gs.probe(),
      (err: Error) => /^gs:\/\/bkt: google_service_account_key: not valid JSON/.test(err.message) && !err.message.includes(SECRET),
    );
    await assert.rejects(gs.read('t.lance/x'), /not valid JSON/);
  });

  test('keys map under the prefix; the whole root is never removed', async () => {
    const az = new AzureBackend(profile('az', { use_emulator: 'true' }));
    assert.equal(az.objectPath('db/t.lance/_versions/1.manifest'), 'pre/db/t.lance/_versions/1.manifest');
    await assert.rejects(az.removeFolder('/'), /refusing to remove the whole storage root/);
    const gs = new GcsBackend(profile('gs', {}));
    assert.equal(gs.objectPath('/db/t.lance'), 'pre/db/t.lance');
    await assert.rejects(gs.removeFolder(''), /refusing to remove the whole storage root/);
  });
});

describe('local folders as a store', () => {
  test('listChildren: entries with their kind; a missing folder, or a file named as a folder, has none; nothing outside the root', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-local-'));
    try {
      const b = new LocalBackend(root);
      fs.mkdirSync(path.join(root, 't.lance', '_versions'), { recursive: true });
      fs.writeFileSync(path.join(root, 't.lance', '_versions', '1.manifest'), 'x');
      fs.writeFileSync(path.join(root, 't.lance', 'data'), 'x');
      assert.deepEqual(
        (await b.listChildren('t.lance')).sort((x, y) => x.name.localeCompare(y.name)),
        [
          { name: '_versions', isDir: true },
          { name: 'data', isDir: false },
        ],
      );
      assert.deepEqual(await b.listChildren('t.lance/_versions'), [{ name: '1.manifest', isDir: false }]);
      assert.deepEqual(await b.listChildren('declared.lance/_versions'), []); // ENOENT
      assert.deepEqual(await b.listChildren('t.lance/data/_versions'), []); // ENOTDIR
      assert.deepEqual(await b.listChildren('../'), []);
      // Any other failure is the caller's to see.
      await assert.rejects(b.listChildren('x'.repeat(300)), { code: 'ENAMETOOLONG' });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
