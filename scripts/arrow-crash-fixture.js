#!/usr/bin/env node
// Finds (and writes) the crash fixture of issue 9: a valid one-row Arrow IPC stream (id Int32, name Utf8, writer
// Int32, vector FixedSizeList<4, Float32>) with two bytes of its schema message changed, on which apache-arrow's
// Message.decode runs out of memory.
//
//   node scripts/arrow-crash-fixture.js            search, then write test/fixtures/arrow/schema-oom.arrow
//   node scripts/arrow-crash-fixture.js --check F  decode F with apache-arrow in a child with a 32 MiB heap
//
// The search changes adjacent byte pairs of the schema metadata, position by position, to a few values (the high
// half of a length set to 0x7fff, 0xffff, ...), and decodes each candidate in a child process started with
// --max-old-space-size=32 and a time limit. The first candidate whose child dies (out of memory, or stuck) is kept.
// Candidates are decoded many to a child (each one announced on stdout before it is decoded), so the search takes
// seconds, not a process per candidate.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const HEAP_MB = 32;
const TIME_LIMIT_MS = 30_000;
const VALUES = [
  [0xff, 0x7f],
  [0xff, 0xff],
  [0x00, 0x7f],
  [0x00, 0x01],
];

/** The valid stream (760 bytes with apache-arrow 18.1). */
function validStream() {
  const arrow = require('apache-arrow');
  const t = new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from([1])),
    name: arrow.vectorFromArray(['alice'], new arrow.Utf8()),
    writer: arrow.vectorFromArray(Int32Array.from([7])),
    vector: arrow.vectorFromArray([[0.1, 0.2, 0.3, 0.4]], new arrow.FixedSizeList(4, new arrow.Field('item', new arrow.Float32(), true))),
  });
  return Buffer.from(arrow.tableToIPC(t, 'stream'));
}

// The child: reads candidates (base64, one a line) from a file, announces and decodes each schema message.
const CHILD = `
const fs = require('node:fs');
const { Message } = require('apache-arrow/ipc/metadata/message');
const lines = fs.readFileSync(process.argv[1], 'utf8').split('\\n').filter(Boolean);
for (let i = 0; i < lines.length; i++) {
  fs.writeSync(1, 'try ' + i + '\\n');
  const b = Buffer.from(lines[i], 'base64');
  try { Message.decode(b.subarray(8, 8 + b.readInt32LE(4))).header(); } catch {}
}
fs.writeSync(1, 'done\\n');
`;

/** Decodes the candidates in one child; the index of the first that killed it, or -1. */
function firstCrash(candidates) {
  const list = path.join(require('node:os').tmpdir(), `arrow-candidates-${process.pid}.txt`);
  fs.writeFileSync(list, candidates.map((c) => c.toString('base64')).join('\n') + '\n');
  try {
    const r = spawnSync(process.execPath, [`--max-old-space-size=${HEAP_MB}`, '-e', CHILD, list], {
      cwd: root,
      encoding: 'utf8',
      timeout: TIME_LIMIT_MS,
      maxBuffer: 64 << 20,
    });
    if (r.stdout.includes('done\n')) return -1;
    const tries = r.stdout
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('try '));
    return tries.length ? Number(tries[tries.length - 1].slice(4)) : 0;
  } finally {
    fs.rmSync(list, { force: true });
  }
}

function check(file) {
  const b = fs.readFileSync(file);
  const code = `
    const b = require('node:fs').readFileSync(process.argv[1]);
    require('apache-arrow/ipc/metadata/message').Message.decode(b.subarray(8, 8 + b.readInt32LE(4))).header();
    console.log('decoded');`;
  const r = spawnSync(process.execPath, [`--max-old-space-size=${HEAP_MB}`, '-e', code, file], {
    cwd: root,
    encoding: 'utf8',
    timeout: TIME_LIMIT_MS,
  });
  const oom = /heap out of memory/i.test(r.stderr);
  console.log(`${file}: ${b.length} bytes; child exit ${r.status} signal ${r.signal}${oom ? ' (JavaScript heap out of memory)' : ''}`);
  return r.status !== 0 || r.signal !== null;
}

function search() {
  const valid = validStream();
  const metaLen = valid.readInt32LE(4);
  const candidates = [];
  const where = [];
  for (let pos = 8; pos + 1 < 8 + metaLen; pos++) {
    for (const [a, b] of VALUES) {
      if (valid[pos] === a || valid[pos + 1] === b) continue; // both bytes changed
      const c = Buffer.from(valid);
      c[pos] = a;
      c[pos + 1] = b;
      candidates.push(c);
      where.push({ pos, a, b });
    }
  }
  // Decode in slices: a child that survives its slice clears all of it; one that dies names the candidate.
  let from = 0;
  while (from < candidates.length) {
    const slice = candidates.slice(from, from + 200);
    const i = firstCrash(slice);
    if (i < 0) {
      from += slice.length;
      continue;
    }
    // Confirm alone (an earlier candidate may have left garbage that only this one tipped over).
    if (firstCrash([slice[i]]) === 0) {
      const w = where[from + i];
      return { stream: slice[i], ...w };
    }
    from += i + 1;
  }
  return undefined;
}

if (process.argv[2] === '--check') {
  process.exit(check(process.argv[3]) ? 0 : 1);
} else {
  const found = search();
  if (!found) {
    console.error('no crashing mutation found');
    process.exit(1);
  }
  const out = path.join(root, 'test', 'fixtures', 'arrow', 'schema-oom.arrow');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, found.stream);
  console.log(
    `schema message byte ${found.pos - 8} (stream offset ${found.pos}) and the next set to ` +
      `0x${found.a.toString(16).padStart(2, '0')} 0x${found.b.toString(16).padStart(2, '0')}; wrote ${path.relative(root, out)}`,
  );
  check(out);
}
