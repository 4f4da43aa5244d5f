import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, test, TestContext } from 'node:test';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { LocalS3, TEST_BUCKET, freshPrefix, s3ClientFor, useLocalS3 } from '../helpers/s3';
import { StsStub } from '../helpers/sts-stub';
import { eventually } from '../helpers/eventually';

/**
 * The tests' in-process servers keep their own failures: an error inside one is answered or logged, and never
 * becomes an uncaught exception (or unhandled rejection) of the test process, which would fail the whole file.
 */
describe('in-process test servers', () => {
  const escaped: unknown[] = [];
  const keep = (err: unknown) => escaped.push(err);
  before(() => {
    process.on('uncaughtException', keep);
    process.on('unhandledRejection', keep);
  });
  after(() => {
    process.off('uncaughtException', keep);
    process.off('unhandledRejection', keep);
  });
  /** What the servers log (console.error) during the calling test. */
  const logs = (t: TestContext): string[] => {
    const lines: string[] = [];
    const log = console.error;
    console.error = (...args: unknown[]) => void lines.push(args.join(' '));
    t.after(() => (console.error = log));
    return lines;
  };

  describe('s3rver', () => {
    let s3: LocalS3;
    before(async () => {
      s3 = await useLocalS3();
    });
    after(() => s3?.release());

    const text = async (key: string) =>
      await (await s3.client.send(new GetObjectCommand({ Bucket: TEST_BUCKET, Key: key }))).Body!.transformToString();

    test('an object whose file cannot be written answers 500 and is logged, nothing escapes, and the server keeps serving', async (t) => {
      const logged = logs(t);
      const p = freshPrefix();
      // s3rver keeps key `k` in the file `k._S3rver_object`; a key under `a._S3rver_object/` makes that path a folder,
      // so writing key `a` fails inside s3rver's store (EISDIR), which its own code threw out of a stream.
      await s3.client.send(new PutObjectCommand({ Bucket: TEST_BUCKET, Key: `${p}/a._S3rver_object/x`, Body: 'x' }));
      await assert.rejects(
        s3.client.send(new PutObjectCommand({ Bucket: TEST_BUCKET, Key: `${p}/a`, Body: 'y' }), {
          abortSignal: AbortSignal.timeout(10_000),
        }),
        (err: { $metadata?: { httpStatusCode?: number } }) => err.$metadata?.httpStatusCode === 500,
      );
      await new Promise((r) => setTimeout(r, 100)); // an error emitted after the answer would come by now
      assert.deepEqual(escaped, []);
      assert.match(logged[0] ?? '', new RegExp(`^s3rver: PUT /${TEST_BUCKET}/${p}/a: EISDIR`));
      await s3.client.send(new PutObjectCommand({ Bucket: TEST_BUCKET, Key: `${p}/b`, Body: 'still here' }));
      assert.equal(await text(`${p}/b`), 'still here');
    });

    test('objects written alongside deletes in the same folder all land, and so do deletes of many keys at once; multipart uploads are put together in order', async (t) => {
      const p = freshPrefix();
      // Every request is served without a failure of the server's (which it would log, answering 500).
      const logged = logs(t);
      // A DELETE removes the folder it leaves empty, possibly between a concurrent PUT's making it and its file.
      for (let i = 0; i < 20; i++) {
        await s3.client.send(new PutObjectCommand({ Bucket: TEST_BUCKET, Key: `${p}/d${i}/gone`, Body: 'g' }));
        await Promise.all([
          s3.client.send(new PutObjectCommand({ Bucket: TEST_BUCKET, Key: `${p}/d${i}/kept`, Body: `kept-${i}` })),
          s3.client.send(new DeleteObjectCommand({ Bucket: TEST_BUCKET, Key: `${p}/d${i}/gone` })),
        ]);
      }
      for (let i = 0; i < 20; i++) assert.equal(await text(`${p}/d${i}/kept`), `kept-${i}`);
      // One DeleteObjects removes its keys in parallel, each clearing the folders it leaves empty.
      const nested = Array.from({ length: 30 }, (_, i) => `${p}/n/${i % 3}/k${i}`);
      await Promise.all(nested.map((Key) => s3.client.send(new PutObjectCommand({ Bucket: TEST_BUCKET, Key, Body: 'n' }))));
      const d = await s3.client.send(
        new DeleteObjectsCommand({ Bucket: TEST_BUCKET, Delete: { Objects: nested.map((Key) => ({ Key })) } }),
        {
          abortSignal: AbortSignal.timeout(10_000),
        },
      );
      assert.deepEqual(d.Errors ?? [], []);
      assert.deepEqual(await s3.keys(`${p}/n/`), []);

      const key = `${p}/multi`;
      const { UploadId } = await s3.client.send(new CreateMultipartUploadCommand({ Bucket: TEST_BUCKET, Key: key }));
      const parts = ['first-', 'second-', 'third'];
      const etags = await Promise.all(
        parts.map(
          async (body, i) =>
            (await s3.client.send(new UploadPartCommand({ Bucket: TEST_BUCKET, Key: key, UploadId, PartNumber: i + 1, Body: body }))).ETag,
        ),
      );
      await s3.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: TEST_BUCKET,
          Key: key,
          UploadId,
          MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        }),
      );
      assert.equal(await text(key), 'first-second-third');
      assert.deepEqual(escaped, []);
      assert.deepEqual(logged, []);
    });

    test('an object is seen whole or not at all: while its PUT streams, a listing and a HEAD do not find it (as on S3)', async () => {
      const p = freshPrefix();
      const key = `${p}/_versions/1.manifest`;
      const body = new PassThrough();
      // A streamed body without the SDK's default checksum trailer (aws-chunked, which s3rver stores as sent); Lance's
      // object store sends plain bodies too.
      const plain = s3ClientFor(s3.endpoint, { requestChecksumCalculation: 'WHEN_REQUIRED' });
      const put = plain.send(new PutObjectCommand({ Bucket: TEST_BUCKET, Key: key, Body: body, ContentLength: 8 }));
      body.write('half');
      // Wait until the server has the first half on disk.
      await eventually(async () => (await readdirDeep(s3.dir)).some((f) => f.includes(`${path.basename(p)}/_versions/1.manifest`)));
      const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: TEST_BUCKET, Prefix: `${p}/` }));
      assert.deepEqual(listed.Contents ?? [], []);
      await assert.rejects(
        s3.client.send(new HeadObjectCommand({ Bucket: TEST_BUCKET, Key: key })),
        (err: { $metadata?: { httpStatusCode?: number } }) => err.$metadata?.httpStatusCode === 404,
      );
      body.end('done');
      await put;
      plain.destroy();
      assert.equal(await text(key), 'halfdone');
      const after = await s3.client.send(new ListObjectsV2Command({ Bucket: TEST_BUCKET, Prefix: `${p}/` }));
      assert.deepEqual(
        after.Contents?.map((o) => [o.Key, o.Size]),
        [[key, 8]],
      );
      assert.ok(!(await readdirDeep(s3.dir)).some((f) => f.endsWith('.partial')), 'no partial file is left');
    });
  });

  test('the STS stub: an error on its server is logged, and it keeps answering', async (t) => {
    const logged = logs(t);
    const stub = await StsStub.start();
    try {
      (stub as unknown as { server: { emit(event: string, err: Error): boolean } }).server.emit('error', new Error('provoked'));
      const r = await fetch(stub.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ Action: 'AssumeRole', RoleArn: 'arn:aws:iam::123456789012:role/r', RoleSessionName: 's' }).toString(),
      });
      assert.equal(r.status, 200, await r.text());
      assert.deepEqual(escaped, []);
      assert.deepEqual(logged, ['sts stub: provoked']);
    } finally {
      await stub.close();
    }
  });
});

/** Every file under a folder, as paths. */
async function readdirDeep(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}
