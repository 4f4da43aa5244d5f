import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { LoggerService } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { ApiError, ErrorCode } from '../src/platform/http/errors';
import { CredentialVendor, VendTable } from '../src/modules/vending/credential-vendor.service';
import { VendingModule } from '../src/modules/vending/vending.module';
import { ConfigModule } from '../src/platform/config/config.module';
import { loadConfig } from '../src/platform/config/config';
import type { StorageProfile } from '../src/platform/config/storage-profile';
import { StsStub } from './helpers/sts-stub';

/** The server's own keys: they sign the STS call and must never reach an answer or a log line. */
const SERVER_KEY_ID = 'AKIASERVEROWNKEY0001';
const SERVER_SECRET = 'server-own-secret-never-vended-0123456789';
const CLIENT_OPTIONS = { aws_endpoint: 'https://s3.eu-west-1.example.com', aws_region: 'eu-west-1', allow_http: 'false' };
const ROLE = 'arn:aws:iam::123456789012:role/lance-tables';

let profiles = 0;
function s3Profile(over: Partial<StorageProfile> = {}): StorageProfile {
  return {
    name: `p${++profiles}`,
    scheme: 's3',
    root: 's3://tables-bucket/tenants',
    bucket: 'tables-bucket',
    prefix: 'tenants',
    options: {
      aws_access_key_id: SERVER_KEY_ID,
      aws_secret_access_key: SERVER_SECRET,
      aws_region: 'eu-west-1',
      aws_endpoint: 'http://internal-s3.local:9000',
    },
    vend: true,
    ...over,
  };
}

function table(name: string): VendTable {
  const key = `tenants/db1/${name}.lance`;
  return { uri: `s3://tables-bucket/${key}`, key };
}

/** Collects what the vendor logs (Nest's Logger, routed here through the testing module). */
class CapturedLog implements LoggerService {
  readonly lines: string[] = [];
  log(m: unknown): void {
    this.lines.push(String(m));
  }
  error(m: unknown): void {
    this.lines.push(String(m));
  }
  warn(m: unknown): void {
    this.lines.push(String(m));
  }
  debug(m: unknown): void {
    this.lines.push(String(m));
  }
  verbose(m: unknown): void {
    this.lines.push(String(m));
  }
}

describe('credential vending', () => {
  let moduleRef: TestingModule;
  let vendor: CredentialVendor;
  let sts: StsStub;
  const logs = new CapturedLog();

  before(async () => {
    sts = await StsStub.start();
    moduleRef = await Test.createTestingModule({ imports: [ConfigModule.register(loadConfig({})), VendingModule] })
      .setLogger(logs)
      .compile();
    vendor = moduleRef.get(CredentialVendor);
  });
  after(async () => {
    await moduleRef.close();
    await sts.close();
  });
  beforeEach(() => {
    sts.requests.length = 0;
    sts.issued.length = 0;
    sts.expiresInSeconds = undefined;
    sts.failWith = undefined;
    logs.lines.length = 0;
  });

  const stsProfile = (over: Partial<StorageProfile> = {}) =>
    s3Profile({
      clientOptions: { ...CLIENT_OPTIONS },
      sts: { roleArn: ROLE, endpoint: sts.endpoint, region: 'us-east-1', externalId: 'ext-42', durationSeconds: 900 },
      ...over,
    });

  describe('static vending', () => {
    it('hands out a copy of the client options, never the server options', async () => {
      const profile = s3Profile({
        clientOptions: { ...CLIENT_OPTIONS, aws_access_key_id: 'CLIENTKEY', aws_secret_access_key: 'client-secret' },
      });
      const answer = await vendor.vend(profile, table('t1'), 'write', true);
      assert.deepEqual(answer, profile.clientOptions);
      assert.ok(!JSON.stringify(answer).includes(SERVER_SECRET));
      assert.ok(!JSON.stringify(answer).includes(SERVER_KEY_ID));
      answer!.injected = 'x';
      assert.equal(profile.clientOptions!.injected, undefined, 'the answer is a copy');
      assert.equal(sts.requests.length, 0);
    });

    it('answers nothing to a credential narrowed by grants (static options reach every table); STS still answers', async () => {
      assert.equal(await vendor.vend(s3Profile({ clientOptions: CLIENT_OPTIONS }), table('t1'), 'read', true, true), undefined);
      const scoped = await vendor.vend(stsProfile(), table('t1'), 'read', true, true);
      assert.ok(scoped && Object.keys(scoped).length > 0, 'temporary credentials are confined to the table: vended');
    });

    it('answers nothing when the profile has no client options (the safe default)', async () => {
      assert.equal(await vendor.vend(s3Profile(), table('t1'), 'write', true), undefined);
      const local: StorageProfile = { name: 'local', scheme: 'file', root: '/data/tables', prefix: '', options: {}, vend: true };
      assert.equal(await vendor.vend(local, { uri: '/data/tables/db/x.lance', key: 'db/x.lance' }, 'read', true), undefined);
    });

    it('answers nothing for vend:false profiles or vend_credentials:false, and calls no STS', async () => {
      for (const profile of [s3Profile({ clientOptions: CLIENT_OPTIONS }), stsProfile()]) {
        assert.equal(await vendor.vend(profile, table('t1'), 'write', false), undefined);
        assert.equal(await vendor.vend({ ...profile, vend: false }, table('t1'), 'write', true), undefined);
      }
      assert.equal(sts.requests.length, 0);
    });
  });

  describe('temporary vending (STS AssumeRole)', () => {
    it('sends a session policy limited to the table prefix, signed with the server key, and answers temporary keys', async () => {
      const profile = stsProfile({ clientOptions: { ...CLIENT_OPTIONS, access_key_id: 'STATICCLIENTKEY' } });
      const answer = await vendor.vend(profile, table('orders'), 'write', true);

      assert.equal(sts.requests.length, 1);
      const req = sts.requests[0];
      assert.equal(req.params.Action, 'AssumeRole');
      assert.equal(req.params.RoleArn, ROLE);
      assert.equal(req.params.DurationSeconds, '900');
      assert.equal(req.params.ExternalId, 'ext-42');
      assert.match(req.params.RoleSessionName, /^lance-gw-w-[0-9a-f]+$/);
      assert.ok(req.params.RoleSessionName.length <= 64);
      assert.equal(req.accessKeyId, SERVER_KEY_ID, 'signed with the key from the profile options');
      assert.equal(req.region, 'us-east-1');
      assert.deepEqual(sts.policy(0), {
        Version: '2012-10-17',
        Statement: [
          {
            Effect: 'Allow',
            Action: 's3:ListBucket',
            Resource: 'arn:aws:s3:::tables-bucket',
            Condition: { StringLike: { 's3:prefix': ['tenants/db1/orders.lance/*', 'tenants/db1/orders.lance'] } },
          },
          { Effect: 'Allow', Action: 's3:GetBucketLocation', Resource: 'arn:aws:s3:::tables-bucket' },
          {
            Effect: 'Allow',
            Action: ['s3:GetObject', 's3:GetObjectVersion'],
            Resource: 'arn:aws:s3:::tables-bucket/tenants/db1/orders.lance/*',
          },
          {
            Effect: 'Allow',
            Action: ['s3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
            Resource: 'arn:aws:s3:::tables-bucket/tenants/db1/orders.lance/*',
          },
        ],
      });

      const issued = sts.issued[0];
      assert.deepEqual(
        answer,
        {
          ...CLIENT_OPTIONS,
          aws_access_key_id: issued.accessKeyId,
          aws_secret_access_key: issued.secretAccessKey,
          aws_session_token: issued.sessionToken,
          expires_at_millis: String(issued.expiration.getTime()),
        },
        'client options overlaid with the temporary keys; the static client key alias is dropped',
      );
      assert.match(answer!.expires_at_millis, /^\d{13}$/);
      const text = JSON.stringify(answer) + logs.lines.join('\n');
      assert.ok(!text.includes(SERVER_SECRET), 'the server secret is never answered or logged');
      assert.ok(!text.includes(SERVER_KEY_ID), 'the server key id is never answered or logged');
      assert.ok(!text.includes('internal-s3.local'), 'the server endpoint is not answered');
    });

    it('read credentials get read-only actions', async () => {
      await vendor.vend(stsProfile(), table('orders'), 'read', true);
      assert.equal(sts.requests.length, 1);
      assert.match(sts.requests[0].params.RoleSessionName, /^lance-gw-r-/);
      const actions = sts.policy(0).Statement.flatMap((s) => [s.Action].flat() as string[]);
      assert.deepEqual(actions.sort(), ['s3:GetBucketLocation', 's3:GetObject', 's3:GetObjectVersion', 's3:ListBucket']);
      for (const s of sts.policy(0).Statement) {
        const resource = s.Resource as string;
        assert.ok(
          resource === 'arn:aws:s3:::tables-bucket' || resource === 'arn:aws:s3:::tables-bucket/tenants/db1/orders.lance/*',
          `resource ${resource} stays within the table`,
        );
      }
    });

    it('without client options the answer is the temporary keys plus the bucket region', async () => {
      const answer = await vendor.vend(stsProfile({ clientOptions: undefined }), table('bare'), 'read', true);
      assert.deepEqual(Object.keys(answer!).sort(), [
        'aws_access_key_id',
        'aws_region',
        'aws_secret_access_key',
        'aws_session_token',
        'expires_at_millis',
      ]);
      assert.equal(answer!.aws_region, 'eu-west-1');
    });

    it('caches per table and access until shortly before expiry; concurrent misses share one call', async () => {
      const profile = stsProfile();
      const first = await vendor.vend(profile, table('cached'), 'write', true);
      const second = await vendor.vend(profile, table('cached'), 'write', true);
      assert.deepEqual(second, first);
      assert.equal(sts.requests.length, 1, 'the second call is answered from the cache');

      second!.aws_session_token = 'tampered';
      assert.equal(
        (await vendor.vend(profile, table('cached'), 'write', true))!.aws_session_token,
        first!.aws_session_token,
        'answers are copies',
      );

      const together = await Promise.all([1, 2, 3].map(() => vendor.vend(profile, table('together'), 'read', true)));
      assert.equal(sts.requests.length, 2, 'three concurrent misses made one STS call');
      assert.deepEqual(together[1], together[0]);
      assert.deepEqual(together[2], together[0]);
    });

    it('distinct tables and distinct access levels get distinct calls', async () => {
      const profile = stsProfile();
      const a = await vendor.vend(profile, table('a'), 'write', true);
      const b = await vendor.vend(profile, table('b'), 'write', true);
      const aRead = await vendor.vend(profile, table('a'), 'read', true);
      assert.equal(sts.requests.length, 3);
      assert.notEqual(a!.aws_access_key_id, b!.aws_access_key_id);
      assert.notEqual(a!.aws_access_key_id, aRead!.aws_access_key_id);
      assert.deepEqual(sts.policy(1).Statement[0].Condition, {
        StringLike: { 's3:prefix': ['tenants/db1/b.lance/*', 'tenants/db1/b.lance'] },
      });
    });

    it('credentials close to expiry are not handed out again: a fresh call is made', async () => {
      const profile = stsProfile();
      sts.expiresInSeconds = 120; // less than the 5-minute margin
      const first = await vendor.vend(profile, table('short'), 'write', true);
      sts.expiresInSeconds = undefined;
      const second = await vendor.vend(profile, table('short'), 'write', true);
      assert.equal(sts.requests.length, 2);
      assert.notEqual(second!.aws_session_token, first!.aws_session_token);
      assert.ok(Number(second!.expires_at_millis) > Number(first!.expires_at_millis));
      await vendor.vend(profile, table('short'), 'write', true);
      assert.equal(sts.requests.length, 2, 'the fresh credential is cached');
    });

    it('an STS failure is a 503 ServiceUnavailable with a log line without secrets, and is not cached', async () => {
      const profile = stsProfile();
      sts.failWith = {
        status: 403,
        code: 'AccessDenied',
        message: `User: arn:aws:iam::123456789012:user/gw is not authorized to perform: sts:AssumeRole`,
      };
      await assert.rejects(vendor.vend(profile, table('denied'), 'write', true), (err: unknown) => {
        assert.ok(err instanceof ApiError);
        assert.equal(err.status, 503);
        assert.equal(err.code, ErrorCode.ServiceUnavailable);
        assert.match(err.message, /AccessDenied/);
        assert.ok(!err.message.includes(SERVER_SECRET));
        return true;
      });
      const line = logs.lines.find((l) => l.includes('STS AssumeRole failed'));
      assert.ok(line, logs.lines.join('\n'));
      assert.match(line, /AccessDenied/);
      assert.match(line, new RegExp(profile.name));
      assert.ok(!logs.lines.join('\n').includes(SERVER_SECRET));
      assert.ok(!logs.lines.join('\n').includes(SERVER_KEY_ID));

      sts.failWith = undefined;
      const answer = await vendor.vend(profile, table('denied'), 'write', true);
      assert.ok(answer?.aws_session_token, 'the next call asks STS again and succeeds');
    });

    it('an unreachable STS is the same 503', async () => {
      const down = await StsStub.start();
      await down.close();
      const profile = stsProfile({ sts: { roleArn: ROLE, endpoint: down.endpoint, durationSeconds: 900 } });
      await assert.rejects(vendor.vend(profile, table('down'), 'read', true), (err: unknown) => {
        assert.ok(err instanceof ApiError);
        assert.equal(err.status, 503);
        return true;
      });
    });

    it('without keys in the profile options the SDK default chain signs (here: the environment)', async () => {
      const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
      process.env.AWS_ACCESS_KEY_ID = 'AKIAFROMENVIRONMENT1';
      process.env.AWS_SECRET_ACCESS_KEY = 'env-secret';
      try {
        await vendor.vend(stsProfile({ options: { aws_region: 'eu-west-1' } }), table('env'), 'read', true);
        assert.equal(sts.requests[0].accessKeyId, 'AKIAFROMENVIRONMENT1');
      } finally {
        for (const [k, v] of [
          ['AWS_ACCESS_KEY_ID', saved.id],
          ['AWS_SECRET_ACCESS_KEY', saved.secret],
        ] as const) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
      }
    });

    it('refuses keys that would widen the policy, and URIs outside the bucket', async () => {
      const profile = stsProfile();
      await assert.rejects(vendor.vend(profile, { uri: 's3://tables-bucket/tenants/*', key: 'tenants/*' }, 'read', true), /wildcards/);
      await assert.rejects(vendor.vend(profile, { uri: 's3://tables-bucket/', key: '' }, 'read', true), /empty table key/);
      await assert.rejects(
        vendor.vend(profile, { uri: 's3://other-bucket/tenants/db1/x.lance', key: 'tenants/db1/x.lance' }, 'read', true),
        /does not match/,
      );
      assert.equal(sts.requests.length, 0);
    });
  });
});
