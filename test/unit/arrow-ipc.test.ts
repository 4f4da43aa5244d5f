import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import * as arrow from 'apache-arrow';
import { Message } from 'apache-arrow/ipc/metadata/message';
import { ApiError } from '../../src/platform/http/errors';
import { readWholeStream, streamInChunks } from '../../src/engine/arrow/arrow-ipc';
import { decodeSchema, MAX_DECOMPRESSED_BATCH_BYTES, splitStream } from '../../src/engine/arrow/arrow-ipc-message';
import { MAX_METADATA_BYTES } from '../../src/engine/arrow/arrow-ipc-reader';
import { SchemaDecodeGuard } from '../../src/engine/arrow/arrow-schema-guard';
import { MAX_ENTRIES_WITHOUT_DATA, UNTRUSTED_LIMITS, verifyMessage } from '../../src/engine/arrow/arrow-verify';
import {
  BatchSpec,
  compressedStream,
  crashFixture,
  EOS,
  frame,
  messagesOf,
  nullColumnStream,
  oneColumnSchemaMessage,
  oneRowTable,
  recordBatchMessage,
  schemaMessage,
  schemaStream,
  sharedChildrenSchemaMessage,
  streamOf,
  wideSchema,
  deepSchema,
} from '../helpers/arrow-craft';
import { ROOT } from '../helpers/root';

/**
 * The verifier of uploaded Arrow IPC metadata (arrow-verify.ts), the stream reader's checks (arrow-ipc.ts) and the
 * schema-decoding worker (arrow-schema-guard.ts), without a gateway. Issue 9: a 760-byte upload ran apache-arrow's
 * decoder out of memory and took the replica down.
 */

const isInvalid = (re?: RegExp) => (e: unknown) =>
  e instanceof ApiError && e.status === 400 && e.code === 13 && (!re || re.test(e.message));
const isTooLarge = (e: unknown) => e instanceof ApiError && e.status === 413;

/** A body that yields `chunks` and then ends (or, with `hang`, never ends). */
async function* source(chunks: Buffer[], hang = false): AsyncGenerator<Buffer> {
  for (const c of chunks) yield c;
  if (hang) await new Promise(() => undefined);
}

const read = (...chunks: Buffer[]) => readWholeStream(source(chunks), 1 << 30);

/** The metadata of a stream's first message. */
const firstMeta = (stream: Buffer) => stream.subarray(8, 8 + stream.readInt32LE(4));

/** Every field of a decoded schema, at every level. */
const countFields = (fields: arrow.Field[]): number => fields.reduce((n, f) => n + 1 + countFields(f.type.children ?? []), 0);

describe('the crash fixture (test/fixtures/arrow/schema-oom.arrow)', () => {
  test('is the valid one-row stream with two bytes of its schema message changed', () => {
    const valid = streamOf(oneRowTable());
    const fixture = crashFixture();
    assert.equal(fixture.length, valid.length);
    const changed = [...fixture].map((b, i) => (b !== valid[i] ? i : -1)).filter((i) => i >= 0);
    assert.equal(changed.length, 2);
    const schemaEnd = 8 + valid.readInt32LE(4);
    assert.ok(
      changed.every((i) => i >= 8 && i < schemaEnd),
      `changed bytes ${changed} lie in the schema message`,
    );
  });

  test("still runs apache-arrow's Message.decode out of memory (a child with a 32 MiB heap)", () => {
    const code = `
      const b = require('node:fs').readFileSync(process.argv[1]);
      require('apache-arrow/ipc/metadata/message').Message.decode(b.subarray(8, 8 + b.readInt32LE(4))).header();
      console.log('decoded');`;
    const file = path.join(ROOT, 'test/fixtures/arrow/schema-oom.arrow');
    const r = spawnSync(process.execPath, ['--max-old-space-size=32', '-e', code, file], { encoding: 'utf8' });
    assert.notEqual(r.stdout.trim(), 'decoded', 'apache-arrow decodes the fixture now: the fixture no longer shows the bug');
    assert.match(r.stderr, /heap out of memory/i);
  });

  test('is refused by the verifier, as a 400 with code 13', () => {
    assert.throws(() => verifyMessage(firstMeta(crashFixture())), isInvalid(/invalid Arrow IPC stream/));
  });

  test('is refused by the stream reader before apache-arrow sees it', async () => {
    await assert.rejects(read(crashFixture()), isInvalid());
  });
});

describe('verifying message metadata', () => {
  test('accepts what apache-arrow writes: schema, record batch, dictionary batch', async () => {
    const [schema, batch] = messagesOf(streamOf(oneRowTable()));
    const s = verifyMessage(schema.meta);
    assert.equal(s.kind, 'schema');
    assert.equal(s.schema!.fields, 5, 'four columns and the fixed-size list item');
    assert.equal(s.schema!.plan.length, 5);
    const b = verifyMessage(batch.meta);
    assert.equal(b.kind, 'batch');
    assert.equal(b.rows, 1);
    assert.equal(b.bodyLength, batch.body.length);

    const dict = new arrow.Table({
      color: arrow.vectorFromArray(['red', 'green', 'red'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
      n: arrow.vectorFromArray(Int32Array.from([1, 2, 3])),
    });
    const msgs = messagesOf(streamOf(dict)).map((m) => verifyMessage(m.meta));
    assert.deepEqual(
      msgs.map((m) => m.kind),
      ['schema', 'dictionary', 'batch'],
    );
    assert.deepEqual([...msgs[0].schema!.dictionaryIds], [msgs[1].dictionaryId]);
    const data = await read(streamOf(dict));
    assert.equal(data.rows, 3);
  });

  test('a vector whose length points past the bytes (the mechanism of the crash) is refused before it is read', () => {
    const meta = Buffer.from(schemaMessage(oneRowTable().schema));
    // Message → header (Schema) → slot 1 (fields): follow the offsets to the vector's length and make it 2^31 - 1.
    const table = (pos: number) => ({ pos, vt: pos - meta.readInt32LE(pos) });
    const slot = (t: { pos: number; vt: number }, i: number) => t.pos + meta.readUInt16LE(t.vt + 4 + 2 * i);
    const deref = (p: number) => p + meta.readUInt32LE(p);
    const msg = table(meta.readUInt32LE(0));
    const schema = table(deref(slot(msg, 2)));
    const vec = deref(slot(schema, 1));
    assert.equal(meta.readUInt32LE(vec), 4, 'found the fields vector');
    meta.writeUInt32LE(0x7fffffff, vec);
    assert.throws(() => verifyMessage(meta), isInvalid(/fields has 2147483647 entries|outside/));
  });

  test('every one- and two-byte change to the schema message is refused, or decodes within the limits', () => {
    const base = firstMeta(streamOf(oneRowTable()));
    let refused = 0;
    let accepted = 0;
    const tryOne = (m: Buffer) => {
      try {
        verifyMessage(m);
      } catch (e) {
        assert.ok(isInvalid()(e), `only 400s: ${(e as Error).message}`);
        refused++;
        return;
      }
      accepted++;
      // Verified: apache-arrow may still find it unreadable, but within bounds.
      try {
        const s = Message.decode(m).header() as arrow.Schema;
        assert.ok(countFields(s.fields) <= UNTRUSTED_LIMITS.maxFields);
      } catch {
        // An error is fine; running away is not.
      }
    };
    for (let i = 0; i < base.length; i++) {
      for (const x of [0x01, 0x80, 0xff]) {
        const m = Buffer.from(base);
        m[i] ^= x;
        tryOne(m);
      }
      if (i + 1 < base.length) {
        for (const [a, b] of [
          [0xff, 0x7f],
          [0x00, 0x01],
          [0xff, 0xff],
        ]) {
          const m = Buffer.from(base);
          m[i] = a;
          m[i + 1] = b;
          tryOne(m);
        }
      }
    }
    assert.ok(refused > 0 && accepted > 0, `refused ${refused}, accepted ${accepted}`);
  });

  test('field count: 10,000 fields pass, 10,001 do not', () => {
    assert.equal(verifyMessage(schemaMessage(wideSchema(UNTRUSTED_LIMITS.maxFields))).schema!.fields, UNTRUSTED_LIMITS.maxFields);
    assert.throws(
      () => verifyMessage(schemaMessage(wideSchema(UNTRUSTED_LIMITS.maxFields + 1))),
      isInvalid(/more than 10000 fields|10001 entries/),
    );
  });

  test('nesting depth: 64 levels pass, 65 do not', () => {
    assert.equal(verifyMessage(schemaMessage(deepSchema(64))).schema!.fields, 64);
    assert.throws(() => verifyMessage(schemaMessage(deepSchema(65))), isInvalid(/nested deeper than 64/));
  });

  test('one child table listed many times (2^30 fields from a few hundred bytes) is refused', () => {
    const meta = sharedChildrenSchemaMessage(30);
    assert.ok(meta.length < 2048, `${meta.length} bytes`);
    assert.throws(() => verifyMessage(meta), isInvalid(/shared tables|more than 10000 fields/));
  });

  test('names, metadata entries: capped', () => {
    const longName = new arrow.Schema([new arrow.Field('x'.repeat(UNTRUSTED_LIMITS.maxNameBytes + 1), new arrow.Int32())]);
    assert.throws(() => verifyMessage(schemaMessage(longName)), isInvalid(/field name is 65537 bytes/));
    const many = new Map(Array.from({ length: UNTRUSTED_LIMITS.maxMetadataEntries + 1 }, (_, i) => [`k${i}`, 'v']));
    const tagged = new arrow.Schema([new arrow.Field('a', new arrow.Int32())], many);
    assert.throws(() => verifyMessage(schemaMessage(tagged)), isInvalid(/metadata has 10001 entries/));
  });

  test('truncated metadata is refused at every length', () => {
    const meta = firstMeta(streamOf(oneRowTable()));
    for (let n = 0; n < meta.length; n += 4) {
      try {
        verifyMessage(meta.subarray(0, n));
      } catch (e) {
        assert.ok(isInvalid()(e));
        continue;
      }
      // A prefix can only pass if everything the message points at lies inside it.
      assert.ok(n > 0);
    }
    assert.throws(() => verifyMessage(Buffer.alloc(0)), isInvalid());
  });
});

describe('record batches against their schema', () => {
  const table = oneRowTable();
  const [schemaMsg, batchMsg] = messagesOf(streamOf(table));
  const rb = Message.decode(batchMsg.meta).header() as unknown as {
    nodes: Array<{ length: number; nullCount: number }>;
    buffers: Array<{ offset: number; length: number }>;
  };
  const spec = (): BatchSpec => ({
    rows: 1,
    nodes: rb.nodes.map((n) => [n.length, n.nullCount]),
    buffers: rb.buffers.map((b) => [b.offset, b.length]),
    bodyLength: batchMsg.body.length,
  });
  const withBatch = (s: BatchSpec, body = batchMsg.body) => Buffer.concat([frame(schemaMsg.meta), frame(recordBatchMessage(s), body), EOS]);

  test('the batch as apache-arrow wrote it is accepted', async () => {
    assert.equal((await read(withBatch(spec()))).rows, 1);
  });

  test('a buffer outside the body', async () => {
    const s = spec();
    s.buffers[1] = [8, batchMsg.body.length];
    await assert.rejects(read(withBatch(s)), isInvalid(/lies outside the \d+-byte body/));
    s.buffers[1] = [-8, 8];
    await assert.rejects(read(withBatch(s)), isInvalid(/outside/));
  });

  test('too many rows, lengths that disagree, nulls without a bitmap', async () => {
    await assert.rejects(read(withBatch({ ...spec(), rows: 2 ** 31 })), isInvalid(/rows \(at most 2147483647\)/));
    const short = spec();
    short.nodes[1] = [0, 0];
    await assert.rejects(read(withBatch(short)), isInvalid(/field node 1 has length 0 where 1 is required/));
    const fsl = spec();
    fsl.nodes[4] = [5, 0];
    await assert.rejects(read(withBatch(fsl)), isInvalid(/field node 4 has length 5 where 4 is required/));
    const nulls = spec();
    nulls.nodes[0] = [1, 1];
    await assert.rejects(read(withBatch(nulls)), isInvalid(/1 nulls in 1 rows and a validity bitmap of 0 bytes/));
  });

  test('field nodes and buffers must be those the schema calls for', async () => {
    const fewer = spec();
    fewer.nodes.pop();
    await assert.rejects(read(withBatch(fewer)), isInvalid(/4 field nodes for a schema of 5/));
    const buffers = spec();
    buffers.buffers.pop();
    await assert.rejects(read(withBatch(buffers)), isInvalid(/9 buffers where its schema calls for 10/));
    const odd = spec();
    odd.buffers[3] = [8, 9]; // the 32-bit offsets of the name column
    await assert.rejects(read(withBatch(odd)), isInvalid(/buffer 3 of 9 bytes holds 4-byte values/));
  });

  test('entries far beyond what the bytes can hold: a null column of 2^31 - 1 rows in 300 bytes is refused', async () => {
    const huge = nullColumnStream(2 ** 31 - 1);
    assert.ok(huge.length < 400, `${huge.length} bytes`);
    await assert.rejects(read(huge), isInvalid(/2147483647 entries, more than its batch's 0 bytes of buffers can hold/));
    assert.equal((await read(nullColumnStream(MAX_ENTRIES_WITHOUT_DATA))).rows, MAX_ENTRIES_WITHOUT_DATA);
    await assert.rejects(read(nullColumnStream(MAX_ENTRIES_WITHOUT_DATA + 1)), isInvalid());
  });

  test('a dictionary batch for a dictionary the schema does not have', async () => {
    const dict = new arrow.Table({ color: arrow.vectorFromArray(['red'], new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())) });
    const [, dictionary] = messagesOf(streamOf(dict));
    const stream = Buffer.concat([frame(schemaMsg.meta), frame(dictionary.meta, dictionary.body), EOS]);
    await assert.rejects(read(stream), isInvalid(/dictionary batch for unknown id/));
  });
});

describe('compressed bodies', () => {
  test('a compressed stream (buffers stored behind their size prefix) is read', async () => {
    const data = await read(compressedStream(oneRowTable()));
    assert.equal(data.rows, 1);
  });

  test('a buffer declaring 1 TiB once decompressed is a 413 (the engine would abort the process allocating it)', async () => {
    await assert.rejects(read(compressedStream(oneRowTable(), { buffer: 1, size: BigInt(2) ** BigInt(40) })), isTooLarge);
    await assert.rejects(read(compressedStream(oneRowTable(), { buffer: 1, size: BigInt(MAX_DECOMPRESSED_BATCH_BYTES + 1) })), isTooLarge);
  });

  test('a negative declared size is a 400', async () => {
    await assert.rejects(read(compressedStream(oneRowTable(), { buffer: 1, size: BigInt(-2) })), isInvalid(/declaring -2 bytes/));
  });
});

describe('stream framing', () => {
  test('a huge declared message length is refused without waiting for (or allocating) the bytes', async () => {
    const head = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    // The body never ends: the reader must not wait for more of it.
    await assert.rejects(readWholeStream(source([head], true), 1 << 30), isInvalid(/bad message length 2147483647/));
    const justOver = Buffer.alloc(8);
    justOver.writeUInt32LE(0xffffffff, 0);
    justOver.writeInt32LE(MAX_METADATA_BYTES + 1, 4);
    await assert.rejects(readWholeStream(source([justOver], true), 1 << 30), isInvalid(/bad message length/));
  });

  test('a stream cut anywhere is a 400', async () => {
    const valid = streamOf(oneRowTable());
    for (let n = 1; n < valid.length - EOS.length; n += 7) {
      await assert.rejects(read(valid.subarray(0, n)), isInvalid(), `cut at ${n}`);
    }
  });

  test('engine output (trusted) is not held to the upload limits', () => {
    const wide = splitStream(schemaStream(wideSchema(UNTRUSTED_LIMITS.maxFields + 2000)));
    assert.equal(decodeSchema(wide[0]).fields.length, UNTRUSTED_LIMITS.maxFields + 2000);
  });
});

describe('the schema-decoding worker (defence in depth)', () => {
  const guards: SchemaDecodeGuard[] = [];
  after(async () => {
    for (const g of guards) await g.close();
  });

  test('the crash fixture, decoded without the verifier, kills the worker and not the process; the next decode works', async () => {
    const guard = new SchemaDecodeGuard({ heapMb: 16, timeoutMs: 600_000 });
    guards.push(guard);
    await assert.rejects(guard.check(firstMeta(crashFixture())), isInvalid(/exceeded the limit of 16 MiB/));
    await guard.check(firstMeta(streamOf(oneRowTable())));
    assert.ok(process.memoryUsage().heapUsed < 1024 ** 3, 'the test process itself is fine');
  });

  test('a decode that runs past the time limit is stopped', async () => {
    const guard = new SchemaDecodeGuard({ heapMb: 4096, timeoutMs: 100 });
    guards.push(guard);
    // 2^40 fields: no decoder finishes that in 100 ms, and in 100 ms it cannot fill 4 GiB.
    await assert.rejects(guard.check(sharedChildrenSchemaMessage(40)), isInvalid(/time limit of 100 ms/));
    // The worker was stopped; the next decode gets a new one (and, here, no time limit to speak of).
    await guard.check(firstMeta(streamOf(oneRowTable())), 600_000);
  });

  test('the worker stays up while uploads come, stops when idle, and starts again for the next one', async () => {
    const guard = new SchemaDecodeGuard({ heapMb: 64, timeoutMs: 600_000, idleMs: 1000 });
    guards.push(guard);
    const meta = firstMeta(streamOf(oneRowTable()));
    assert.equal(guard.running, false, 'started on first use only');
    await guard.check(meta);
    assert.equal(guard.running, true);
    // Jobs closer together than the idle time keep the same worker.
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 50));
      await guard.check(meta);
      assert.equal(guard.running, true, 'kept between jobs');
    }
    const quietSince = Date.now();
    while (guard.running && Date.now() - quietSince < 10_000) await new Promise((r) => setTimeout(r, 50));
    assert.equal(guard.running, false, 'stopped after the idle time');
    assert.ok(Date.now() - quietSince >= 900, 'not before it');
    await guard.check(meta);
    assert.equal(guard.running, true, 'started again');
    await assert.rejects(guard.check(oneColumnSchemaMessage(24)), isInvalid(/unreadable schema/), 'and it still checks');
  });

  test('a schema apache-arrow cannot decode (a type it does not know) is a 400 carrying its reason', async () => {
    const guard = new SchemaDecodeGuard({ heapMb: 64, timeoutMs: 600_000 });
    guards.push(guard);
    const utf8View = oneColumnSchemaMessage(24);
    assert.equal(verifyMessage(utf8View).kind, 'schema', 'well-formed: the verifier lets it through');
    await assert.rejects(guard.check(utf8View), isInvalid(/unreadable schema \(Unrecognized type/));
    await assert.rejects(read(Buffer.concat([frame(utf8View), EOS])), isInvalid(/Unrecognized type/));
  });
});

describe('engine failures (docs/hostile-input.md)', () => {
  test('a panic inside an asynchronous engine call arrives as an error; the process carries on', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lgw-panic-'));
    try {
      const db = await lancedb.connect(dir);
      const t = await db.createTable('t', [{ id: 1 }]);
      // The planner panics ("not yet implemented") on a bare `$`.
      await assert.rejects(t.countRows('$'), (e: unknown) => e instanceof Error && /not yet implemented/.test(e.message));
      assert.equal(await t.countRows(), 1, 'the same table still answers');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a failed native allocation is not an error but the end of the process: why compressed sizes are checked', () => {
    // The engine handed a compressed buffer declaring 2^62 bytes, without the reader's checks: in a child process.
    const code = `
      const fs = require('node:fs');
      const lancedb = require('@lancedb/lancedb');
      const { splitStream, decodeSchema } = require(${JSON.stringify(require.resolve('../../src/engine/arrow/arrow-ipc-message'))});
      const { ipcFile } = require(${JSON.stringify(require.resolve('../../src/engine/arrow/arrow-ipc-file'))});
      const [schema, ...rest] = splitStream(fs.readFileSync(process.argv[1]));
      const file = ipcFile(decodeSchema(schema), schema, [], rest);
      lancedb.connect(fs.mkdtempSync(require('node:path').join(require('node:os').tmpdir(), 'lgw-abort-')))
        .then((db) => db.inner.createTable('t', file, 'create', [], undefined))
        .then(() => console.log('created'), (e) => console.log('error', e.message));`;
    const file = path.join(os.tmpdir(), `lgw-bomb-${process.pid}.arrow`);
    fs.writeFileSync(file, compressedStream(oneRowTable(), { buffer: 1, size: BigInt(2) ** BigInt(62) }));
    try {
      const r = spawnSync(process.execPath, ['-e', code, file], { encoding: 'utf8', env: { ...process.env, RUST_BACKTRACE: '0' } });
      assert.equal(r.stdout.trim(), '', 'neither created nor an error');
      assert.equal(r.signal, 'SIGABRT');
      assert.match(r.stderr, /memory allocation of 4611686018427387904 bytes failed/);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });
});

describe('chunked uploads', () => {
  test('each chunk is a whole IPC file of its own rows, intact until its write is done, while the next is laid out', async () => {
    // 40 batches of 100 rows, each with its own values, sent as many small pieces; chunks of about 4 batches. Each
    // write takes a while and reads its file only at the end, when the next chunk has been laid out meanwhile: a
    // buffer reused too early (the two chunk buffers are used in turn) shows up as another chunk's rows.
    const batches = Array.from({ length: 40 }, (_, b) =>
      arrow.tableFromArrays({
        id: Int32Array.from({ length: 100 }, (_, i) => b * 100 + i),
        v: Float64Array.from({ length: 100 }, (_, i) => b + i / 1000),
      }),
    );
    const stream = streamOf(new arrow.Table(batches.flatMap((t) => t.batches)));
    const pieces: Buffer[] = [];
    for (let i = 0; i < stream.length; i += 999) pieces.push(stream.subarray(i, i + 999));
    const seen: number[][] = [];
    const chunkBytes = 4 * 1600;
    const result = await streamInChunks(source(pieces), 1 << 30, chunkBytes, async (file, rows, index) => {
      await new Promise((r) => setTimeout(r, 5));
      const t = arrow.tableFromIPC(file);
      assert.equal(t.numRows, rows, `chunk ${index}: the rows it was counted with`);
      seen[index] = Array.from(t.getChild('id')!.toArray() as Int32Array);
      const v = t.getChild('v')!.toArray() as Float64Array;
      seen[index].forEach((id, i) => assert.equal(v[i], Math.floor(id / 100) + (id % 100) / 1000, `chunk ${index}, row ${i}`));
    });
    assert.ok(result.chunks >= 8, `several chunks (${result.chunks})`);
    assert.equal(result.rows, 4000);
    assert.deepEqual(
      seen.flat(),
      Array.from({ length: 4000 }, (_, i) => i),
      'every row once, in order',
    );
  });

  test('a batch is copied out of the request as it arrives: no received piece is held until its chunk is laid out', async () => {
    // The pieces are scribbled over once four more have been asked for (a receive buffer reused): anything that kept
    // a piece (rather than copying it as it came) until its chunk was laid out hands the engine scribbles.
    const batches = Array.from({ length: 24 }, (_, b) =>
      arrow.tableFromArrays({ id: Int32Array.from({ length: 100 }, (_, i) => b * 100 + i) }),
    );
    const stream = streamOf(new arrow.Table(batches.flatMap((t) => t.batches)));
    async function* lent(): AsyncGenerator<Buffer> {
      const handed: Buffer[] = [];
      for (let i = 0; i < stream.length; i += 333) {
        handed.push(Buffer.from(stream.subarray(i, i + 333)));
        yield handed[handed.length - 1];
        if (handed.length > 4) handed[handed.length - 5].fill(0xee);
      }
    }
    const ids: number[] = [];
    const result = await streamInChunks(lent(), 1 << 30, 5 * 400, async (file) => {
      ids.push(...(arrow.tableFromIPC(file).getChild('id')!.toArray() as Int32Array));
    });
    assert.ok(result.chunks >= 4, `several chunks (${result.chunks})`);
    assert.deepEqual(
      ids,
      Array.from({ length: 2400 }, (_, i) => i),
    );
  });

  test('a batch larger than the chunk size is a chunk of its own, whole', async () => {
    const sizes = [10, 3000, 20, 5000, 7];
    let from = 0;
    const batches = sizes.map((n) => {
      const t = arrow.tableFromArrays({ id: Int32Array.from({ length: n }, (_, i) => from + i) });
      from += n;
      return t.batches[0];
    });
    const stream = streamOf(new arrow.Table(batches));
    const pieces: Buffer[] = [];
    for (let i = 0; i < stream.length; i += 4096) pieces.push(stream.subarray(i, i + 4096));
    const chunkRows: number[] = [];
    const ids: number[] = [];
    const result = await streamInChunks(source(pieces), 1 << 30, 1000, async (file, rows) => {
      const t = arrow.tableFromIPC(file);
      assert.equal(t.numRows, rows);
      chunkRows.push(rows);
      ids.push(...(t.getChild('id')!.toArray() as Int32Array));
    });
    assert.deepEqual(chunkRows, [3010, 5020, 7], 'a chunk ends at the first batch past the chunk size');
    assert.equal(result.rows, from);
    assert.deepEqual(
      ids,
      Array.from({ length: from }, (_, i) => i),
    );
  });

  test('a dictionary that replaces an earlier one mid-stream starts a chunk: the rows before and after it decode to what was sent', async () => {
    const first = ['red', 'green'];
    const second = ['blue', 'black', 'white'];
    const part = (words: string[], from: number) =>
      new arrow.Table({
        id: arrow.vectorFromArray(Int32Array.from({ length: 30 }, (_, i) => from + i)),
        colour: arrow.vectorFromArray(
          Array.from({ length: 30 }, (_, i) => words[i % words.length]),
          new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32(), 0),
        ),
      }).batches;
    const stream = Buffer.from(arrow.RecordBatchStreamWriter.writeAll([...part(first, 0), ...part(second, 30)]).toUint8Array(true));
    const seen: [number, string][] = [];
    await streamInChunks(source([stream]), 1 << 30, 1 << 20, async (file) => {
      const t = arrow.tableFromIPC(file);
      const id = t.getChild('id')!.toArray() as Int32Array;
      id.forEach((v, i) => seen.push([v, t.getChild('colour')!.get(i) as string]));
    });
    assert.deepEqual(
      seen,
      Array.from({ length: 60 }, (_, v) => [v, v < 30 ? first[v % 2] : second[(v - 30) % 3]]),
    );
  });

  test('a dictionary-encoded column: every chunk carries the dictionaries and decodes to the values sent', async () => {
    const colours = ['red', 'green', 'blue'];
    const all = new arrow.Table({
      id: arrow.vectorFromArray(Int32Array.from({ length: 1500 }, (_, i) => i)),
      colour: arrow.vectorFromArray(
        Array.from({ length: 1500 }, (_, i) => colours[(Math.floor(i / 50) + (i % 50)) % 3]),
        new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32()),
      ),
    });
    const parts = Array.from({ length: 30 }, (_, b) => all.slice(b * 50, b * 50 + 50).batches).flat();
    const stream = Buffer.from(arrow.RecordBatchStreamWriter.writeAll(parts).toUint8Array(true));
    const pieces: Buffer[] = [];
    for (let i = 0; i < stream.length; i += 777) pieces.push(stream.subarray(i, i + 777));
    const ids: number[] = [];
    const result = await streamInChunks(source(pieces), 1 << 30, 3 * 500, async (file) => {
      await new Promise((r) => setTimeout(r, 2));
      const t = arrow.tableFromIPC(file);
      const id = t.getChild('id')!.toArray() as Int32Array;
      const colour = t.getChild('colour')!;
      id.forEach((v, i) => assert.equal(colour.get(i), colours[(Math.floor(v / 50) + (v % 50)) % 3], `row ${v}`));
      ids.push(...id);
    });
    assert.ok(result.chunks >= 5, `several chunks (${result.chunks})`);
    assert.deepEqual(
      ids,
      Array.from({ length: 1500 }, (_, i) => i),
    );
  });
});
