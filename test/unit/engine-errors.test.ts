import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError } from '../../src/platform/http/errors';
import {
  cleanEngineMessage,
  ENGINE_ERROR_RULES,
  EngineFault,
  engineErrorRule,
  translateEngineError,
} from '../../src/engine/lance/engine-errors';
import { engineSqlProblem } from '../../src/engine/lance/engine-sql';

/**
 * The translation of engine errors (src/engine/lance/engine-errors.ts), row by row. Every message below is one the engine
 * (@lancedb/lancedb 0.39, lance 12) really produced for the operation named, captured by running it against a
 * table on disk; only the temporary folder in it was replaced by the storage root these tests use.
 */
const ROOT = '/tmp/lgw-test-Xy12/tables';
const LOC = 'tmp/lgw-test-Xy12/tables/acme/0f8e6c1e-5d0c-4a8e-9a3f-3b2f1c0d9e7a.lance';
const RS = '/usr/local/cargo/registry/src/index.crates.io-1949cf8c6b5b557f';

interface Case {
  what: string;
  message: string;
  rule: string;
  /** Expected answer: [status, code]; 'fault' = EngineFault (500). */
  answer: [number, number] | 'fault';
}

const CASES: Case[] = [
  // engine-bug
  { what: "count_rows('$') (a placeholder reaches a todo!())", message: 'not yet implemented', rule: 'engine-bug', answer: 'fault' },
  { what: 'IVF_PQ with num_partitions 0', message: 'Panic in async function', rule: 'engine-bug', answer: 'fault' },
  {
    what: 'opening a table whose folder holds a stray 1.manifest',
    message: `lance error: Encountered internal error. Please file a bug report at https://github.com/lance-format/lance/issues. Found multiple manifest naming schemes in the same directory: V1 and V2. Use \`migrate_manifest_paths_v2\` to migrate the directory., ${RS}/lance-table-12.0.0/src/io/commit.rs:647:32  Caused by: Encountered internal error.`,
    rule: 'engine-bug',
    answer: 'fault',
  },
  // commit-conflict
  {
    what: 'two alter_columns at once',
    message: `lance error: Retryable commit conflict for version 12: This Project transaction was preempted by concurrent transaction Project at version 12. Please retry., ${RS}/lance-12.0.0/src/io/commit/conflict_resolver.rs:1594:26  Caused by: Retryable commit conflict for version 12`,
    rule: 'commit-conflict',
    answer: [409, 14],
  },
  {
    what: 'update racing a restore',
    message: `lance error: Incompatible transaction: This Update transaction is incompatible with concurrent transaction Restore at version 15., ${RS}/lance-12.0.0/src/io/commit/conflict_resolver.rs:676:30  Caused by: Incompatible transaction`,
    rule: 'commit-conflict',
    answer: [409, 14],
  },
  // tags and branches (Lance refs)
  {
    what: 'tags.getVersion / update / delete of an unknown tag',
    message: 'lance error: Ref not found error: tag nope does not exist  Caused by: Ref not found error: tag nope does not exist',
    rule: 'tag-not-found',
    answer: [404, 8],
  },
  {
    what: 'tags.create of an existing tag',
    message: 'lance error: Ref conflict error: tag v1 already exists  Caused by: Ref conflict error: tag v1 already exists',
    rule: 'tag-exists',
    answer: [409, 9],
  },
  {
    what: 'branches.delete of an unknown branch',
    message: 'lance error: Ref not found error: Branch nope does not exist  Caused by: Ref not found error: Branch nope does not exist',
    rule: 'branch-ref-not-found',
    answer: [404, 22],
  },
  {
    what: "openTable with branch '.'",
    message: `lance error: LanceError(IO): Error parsing Path "${LOC}/tree/.": Encountered illegal character sequence "." whilst parsing path segment ".", ${RS}/lance-12.0.0/src/dataset/branch_location.rs:130:22  Caused by: LanceError(IO): Error parsing Path "${LOC}/tree/.": Encountered illegal character sequence "." whilst parsing path segment "."`,
    rule: 'branch-path-invalid',
    answer: [400, 13],
  },
  {
    what: 'two branches/create of one name at once (the loser)',
    message: `lance error: Dataset already exists: ${LOC}/tree/race, ${RS}/lance-12.0.0/src/io/commit.rs:556:17  Caused by: Dataset already exists: ${LOC}/tree/race, ${RS}/lance-12.0.0/src/io/commit.rs:556:17`,
    rule: 'branch-exists',
    answer: [409, 23],
  },
  {
    what: 'branches.delete of a branch a tag points into',
    message:
      'lance error: Ref conflict error: Branch dev is referenced by tags [("onb", 3)], can not delete  Caused by: Ref conflict error: Branch dev is referenced by tags [("onb", 3)], can not delete',
    rule: 'branch-in-use',
    answer: [409, 19],
  },
  {
    what: 'tags.create at a version the table does not have',
    message:
      'lance error: Version not found error: version main:99 does not exist  Caused by: Version not found error: version main:99 does not exist',
    rule: 'ref-version-not-found',
    answer: [404, 11],
  },
  {
    what: 'updateFieldMetadata of an unknown path',
    message: "lance error: Field 'zz' not found.\nAvailable fields: ['a']  Caused by: Field 'zz' not found.\n  Available fields: ['a']",
    rule: 'field-not-found',
    answer: [404, 12],
  },
  // index-exists
  {
    what: 'create_index with replace false on an indexed column',
    message: `lance error: LanceError(Index): Index name 'id_idx' already exists, please specify a different name or use replace=True, ${RS}/lance-12.0.0/src/index/create.rs:319:24  Caused by: LanceError(Index): Index name 'id_idx' already exists`,
    rule: 'index-exists',
    answer: [409, 7],
  },
  {
    what: 'create_index reusing a name on another column',
    message: `lance error: LanceError(Index): Index name 'x' already exists with different fields, please specify a different name, ${RS}/lance-12.0.0/src/index/create.rs:313:24`,
    rule: 'index-exists',
    answer: [409, 7],
  },
  // index-not-found
  {
    what: "drop_index('nope')",
    message: `lance error: Lance index not found: name=nope, ${RS}/lance-12.0.0/src/index.rs:1712:24  Caused by: Lance index not found: name=nope, ${RS}/lance-12.0.0/src/index.rs:1712:24`,
    rule: 'index-not-found',
    answer: [404, 6],
  },
  // table-exists
  { what: 'create over an existing table', message: "Table 'items' already exists", rule: 'table-exists', answer: [409, 5] },
  // branch-invalid
  {
    what: "branch 'a..b'",
    message:
      "lance error: Ref is invalid: Branch name cannot contain '..' or '\\'  Caused by: Ref is invalid: Branch name cannot contain '..' or '\\'",
    rule: 'branch-invalid',
    answer: [400, 13],
  },
  {
    what: "branch 'a b'",
    message:
      "lance error: Ref is invalid: Branch segment 'a b' contains invalid characters. Only alphanumeric, '.', '-', '_' are allowed.  Caused by: Ref is invalid",
    rule: 'branch-invalid',
    answer: [400, 13],
  },
  // branch-not-found
  {
    what: "branch 'nope'",
    message: `lance error: Not found: ${LOC}/tree/nope/_versions, ${RS}/lance-table-12.0.0/src/io/commit.rs:670:26  Caused by: Not found: ${LOC}/tree/nope/_versions, ${RS}/lance-table-12.0.0/src/io/commit.rs:670:26`,
    rule: 'branch-not-found',
    answer: [404, 22],
  },
  {
    what: 'from_branch with blanks and quotes (found by the fuzz test)',
    message: `lance error: Not found: ${LOC}/tree/x'); DROP TABLE "Database"; --/_versions, ${RS}/lance-table-12.0.0/src/io/commit.rs:670:26`,
    rule: 'branch-not-found',
    answer: [404, 22],
  },
  // version-not-found
  {
    what: 'checkout(999)',
    message: `lance error: Dataset at path ${LOC}/_versions/999.manifest was not found: Not found: ${LOC}/_versions/999.manifest, ${RS}/lance-io-12.0.0/src/local.rs:273:40, ${RS}/lance-12.0.0/src/dataset.rs:752:44  Caused by: Dataset at path`,
    rule: 'version-not-found',
    answer: [404, 11],
  },
  {
    what: "branches.create from branch 'dev' at a version it does not have (its manifest's path is under tree/dev/_versions)",
    message: `lance error: Dataset at path ${LOC}/tree/dev/_versions/99.manifest was not found: Not found: ${LOC}/tree/dev/_versions/99.manifest, ${RS}/lance-io-12.0.0/src/local.rs:273:40, ${RS}/lance-12.0.0/src/dataset.rs:752:44  Caused by: Dataset at path ${LOC}/tree/dev/_versions/99.manifest was not found: Not found: ${LOC}/tree/dev/_versions/99.manifest, ${RS}/lance-io-12.0.0/src/local.rs:273:40`,
    rule: 'version-not-found',
    answer: [404, 11],
  },
  // name-too-long
  {
    what: 'tags.delete of a tag whose name is longer than the file system allows (captured with a 240,000-character name)',
    message: `lance error: LanceError(IO): Generic LocalFileSystem error: Unable to open file ${LOC}/_refs/tags/${'F'.repeat(300)}.json: File name too long (os error 36), ${RS}/lance-io-12.0.0/src/object_store.rs:1609:29  Caused by: LanceError(IO): Generic LocalFileSystem error: Unable to open file ${LOC}/_refs/tags/${'F'.repeat(300)}.json: File name too long (os error 36), ${RS}/lance-io-12.0.0/src/object_store.rs:1609:29    Caused by: Generic LocalFileSystem error`,
    rule: 'name-too-long',
    answer: [400, 13],
  },
  // table-data-missing
  {
    what: 'opening a location with no table',
    message: `Table '0f8e6c1e-5d0c-4a8e-9a3f-3b2f1c0d9e7a' was not found  Caused by: Dataset at path ${LOC} was not found: Not found: ${LOC}/_versions, ${RS}/lance-table-12.0.0/src/io/commit.rs:670:26`,
    rule: 'table-data-missing',
    answer: [404, 4],
  },
  // schema-mismatch
  {
    what: 'insert of rows with an unknown column (IPC)',
    message: "Invalid input, field 'zzz' does not exist in table schema",
    rule: 'schema-mismatch',
    answer: [400, 20],
  },
  {
    what: 'add() of rows with an unknown column',
    message: 'Found field not in schema: extra at row 0',
    rule: 'schema-mismatch',
    answer: [400, 20],
  },
  // duplicate-field
  {
    what: 'create from a stream with two fields named a',
    message:
      'lance error: LanceError(Schema): Duplicate field name "a" in schema:\n Schema {\n    fields: [\n        Field {\n            name: "a",',
    rule: 'duplicate-field',
    answer: [400, 13],
  },
  // bad-arrow
  {
    what: 'create from bytes that are no IPC file',
    message: 'Failed to read IPC file: Arrow error: Parser error: Arrow file does not contain correct footer',
    rule: 'bad-arrow',
    answer: [400, 13],
  },
  {
    what: 'insert whose body has an out-of-bounds offset (found by the fuzz test, seed issue-9 #4225)',
    message:
      'Failed to read record batch from IPC file: Invalid argument error: Offset invariant failure: offset at position 19 out of bounds: 65394 > 120',
    rule: 'bad-arrow',
    answer: [400, 13],
  },
  {
    what: 'add of garbage bytes',
    message: 'Failed to read IPC file: Arrow error: Io error: invalid seek to a negative or overflowing position',
    rule: 'bad-arrow',
    answer: [400, 13],
  },
  // unprocessable
  {
    what: 'IVF_PQ num_partitions 1000000 on 50 rows',
    message: `lance error: Unprocessable: KMeans cannot train 1000000 centroids with 50 vectors; choose a smaller K (< 50), ${RS}/lance-index-12.0.0/src/vector/kmeans.rs:1905:20  Caused by: Unprocessable: KMeans cannot train 1000000 centroids with 50 vectors`,
    rule: 'unprocessable',
    answer: [400, 13],
  },
  {
    what: 'IVF_PQ on 50 rows',
    message: `lance error: Unprocessable: Not enough rows to train PQ. Requires 256 rows but only 50 available, ${RS}/lance-index-12.0.0/src/vector/pq/builder.rs:209:24`,
    rule: 'unprocessable',
    answer: [400, 13],
  },
  // storage-failure
  {
    what: 'a query after a data file vanished',
    message: `Failed to get next batch from stream: lance error: LanceError(IO): Generic N/A error: Wrapped error: Not found: Wrapped error: Not found: /${LOC}/data/1000010001010010100011014e371d42499a8f3a19ed60e734.lance, /rustc/2d8144b7880597b6e6d3dfd63a9a9efae3f533d3/library/core/src/result.rs:1896:29`,
    rule: 'storage-failure',
    answer: 'fault',
  },
  // invalid-input
  {
    what: "count_rows('id >')",
    message: 'Invalid input, Error parsing statement: SELECT 1 FROM t WHERE id > (sql parser error: Expected: an expression, found: EOF)',
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: "count_rows('nope = 1')",
    message:
      'Invalid input, Schema error: No field named nope. Valid fields are id, text, vector, _rowid, _rowaddr, _row_last_updated_at_version, _row_created_at_version, _rowoffset.',
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: 'count_rows("id = \'abc\'")',
    message: `Invalid input, Error resolving filter expression id = 'abc': Invalid user input: Received literal Utf8("abc") and could not convert to literal of type 'Float64', ${RS}/lance-datafusion-12.0.0/src/logical_expr.rs:24:88`,
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: "count_rows('sum(id) > 1')",
    message:
      'lance error: Not supported: This feature is not implemented: Physical plan does not support logical expression AggregateFunction(AggregateFunction { func: AggregateUDF { inner: Sum {',
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: "count_rows('frobnicate(id)')",
    message: "Invalid input, Error parsing function: Error during planning: Invalid function 'frobnicate'.\nDid you mean 'concat'?",
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: 'a 2-d query vector on a 4-d column',
    message:
      'Failed to execute query stream: GenericFailure, Invalid input, No vector column found to match with the query vector dimension: 2',
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: 'BTREE on a vector column',
    message: 'Schema Error: A BTree index cannot be created on the field `vector` which has data type FixedSizeList(4 x Float32)',
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: 'IVF_PQ num_bits 3',
    message: `lance error: LanceError(Index): ProductQuantization: num_bits 3 not supported, ${RS}/lance-index-12.0.0/src/vector/pq.rs:152:22`,
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: 'count_rows("text[\'a\'] = 1")',
    message: `lance error: Query Execution error: Execution error: Cannot access field at argument 1: type Utf8 is not Struct, Map, or Null, ${RS}/lance-12.0.0/src/dataset/scanner.rs:802:33`,
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: 'a multi_match query with no columns',
    message: `Failed to create multi match query: Invalid user input: Cannot create MultiMatchQuery with no columns, ${RS}/lance-index-12.0.0/src/scalar/inverted/query.rs:591:24`,
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: "drop_columns(['nope'])",
    message: 'Invalid input, Column nope does not exist in the dataset',
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: 'merge_insert on an unknown key',
    message: "Failed to execute merge insert: GenericFailure, Invalid input, Merge insert key column 'nope' does not exist in schema",
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: 'update of a number column to a string',
    message: `lance error: LanceError(Arrow): Cast error: Cannot cast string 'a' to value of Float64 type, ${RS}/lance-datafusion-12.0.0/src/utils.rs:51:31`,
    rule: 'invalid-input',
    answer: [400, 13],
  },
  {
    what: "add_columns named 'a.b' (and create with a column 'a.b')",
    message: `lance error: LanceError(Schema): Top level field a.b cannot contain \`.\`. Maybe you meant to create a struct field?, ${RS}/lance-core-12.0.0/src/datatypes/schema.rs:336:28`,
    rule: 'schema-refused',
    answer: [400, 20],
  },
  {
    what: 'FTS with a model-backed tokenizer whose model is not installed',
    message: 'Invalid input, Invalid directory path: /root/.local/share/lance/language_models/jieba/default',
    rule: 'invalid-input',
    answer: [400, 13],
  },
  // no row: an EngineFault
  { what: 'a call on a closed table handle', message: 'Table items is closed', rule: '(none)', answer: 'fault' },
];

describe('engine error translation', () => {
  for (const c of CASES) {
    test(`${c.rule}: ${c.what}`, () => {
      assert.equal(engineErrorRule(c.message)?.name ?? '(none)', c.rule);
      const out = translateEngineError(new Error(c.message), ROOT);
      if (c.answer === 'fault') {
        assert.ok(out instanceof EngineFault, `expected an EngineFault, got ${String(out)}`);
        assert.ok(!(out instanceof ApiError));
        assert.match(out.stack ?? '', /caused by Error: /, 'the original stack is kept for the log');
        return;
      }
      assert.ok(out instanceof ApiError, `expected an ApiError, got ${String(out)}`);
      assert.deepEqual([out.status, out.code], c.answer);
      assert.ok(out.message.length > 0 && out.message.length <= 1000);
      assert.doesNotMatch(out.message, /lgw-test-Xy12|\/usr\/local\/cargo|\.rs:\d+|\/root\//, 'no server path in the answer');
      // Nor a table's storage path below the root: answers name tables, branches and versions.
      assert.doesNotMatch(out.message, /\.lance\b|_versions|\.manifest|tree\//, 'no storage path in the answer');
      assert.doesNotMatch(out.message, /Caused by/);
    });
  }

  test('every row has at least one captured message', () => {
    const covered = new Set(CASES.map((c) => c.rule));
    for (const r of ENGINE_ERROR_RULES) assert.ok(covered.has(r.name), `row '${r.name}' has no captured message`);
  });

  test('a missing version names the version and the branch asked for', () => {
    const missing = (at: string) =>
      new Error(`lance error: Dataset at path ${LOC}/${at}/99.manifest was not found: Not found: ${LOC}/${at}/99.manifest`);
    const onDev = translateEngineError(missing('tree/dev/_versions'), ROOT, { branch: 'dev' });
    assert.ok(onDev instanceof ApiError);
    assert.deepEqual([onDev.status, onDev.code, onDev.message], [404, 11, "version 99 of branch 'dev' not found"]);
    const onMain = translateEngineError(missing('_versions'), ROOT);
    assert.ok(onMain instanceof ApiError);
    assert.deepEqual([onMain.status, onMain.code, onMain.message], [404, 11, 'version 99 not found']);
  });

  test('errors already translated pass through unchanged', () => {
    const api = new ApiError(400, 13, 'x');
    assert.equal(translateEngineError(api, ROOT), api);
    const fault = new EngineFault('y', 'engine-bug');
    assert.equal(translateEngineError(fault, ROOT), fault);
  });

  test('messages lose server paths, source locations and the repeated cause', () => {
    const cleaned = cleanEngineMessage(
      `lance error: Dataset at path ${LOC}/_versions/9.manifest was not found: Not found: ${LOC}/_versions/9.manifest, ${RS}/lance-io-12.0.0/src/local.rs:273:40  Caused by: Dataset at path ${LOC}`,
      ROOT,
    );
    assert.equal(
      cleaned,
      'Dataset at path acme/0f8e6c1e-5d0c-4a8e-9a3f-3b2f1c0d9e7a.lance/_versions/9.manifest was not found: Not found: acme/0f8e6c1e-5d0c-4a8e-9a3f-3b2f1c0d9e7a.lance/_versions/9.manifest',
    );
    assert.equal(
      cleanEngineMessage('Invalid input, Invalid directory path: /root/.local/share/lance/x'),
      'Invalid input, Invalid directory path: <path>',
    );
    assert.equal(cleanEngineMessage('x'.repeat(5000)).length, 1000);
  });
});

/** Forms of SQL the engine panics on (captured: each made count_rows answer "not yet implemented"), and ones it takes. */
describe('engine SQL guard', () => {
  const panics = [
    '$',
    '${jndi:x}',
    'id = $1',
    'id = ?',
    'id = ?1',
    'id > :x',
    'id = :1',
    'id = $a',
    'id = -$1',
    'id IN ($1)',
    'id BETWEEN 1 AND ?',
    "text = N'a'",
    "text = n'a'",
    "text = B'01'",
    "text = b'01'",
    'text = b"a"',
    "text = R'a'",
    'text = r"a"',
    'text = $$a$$',
    'text = $a$x$a$',
    // A quote hidden from one reading of backslashes must not hide a placeholder from the other.
    "text = 'a\\'' OR id = $1 OR 'x'",
    "text = 'a\\' OR id = $1 --'",
    '1$1 = id',
  ];
  const fine = [
    'id > 1',
    "text = '$'",
    "text = 'a?b' AND text != ':x'",
    '`a$b` = 1',
    '"a$b" = text',
    'a$b = 1',
    'id::bigint = 1',
    "text = E'a'",
    "text = X'00'",
    "text = 'it''s'",
    "RB'a' = text",
    'array_has([1,2], id)',
    "regexp_like(text, '(')",
    'id % 2 = 0',
  ];
  for (const sql of panics) test(`refuses ${JSON.stringify(sql)}`, () => assert.ok(engineSqlProblem(sql), sql));
  for (const sql of fine) test(`lets ${JSON.stringify(sql)} through`, () => assert.equal(engineSqlProblem(sql), undefined, sql));

  test('refuses comments, which could hide a quote from the scan', () => {
    assert.match(engineSqlProblem("id = 1 -- '")!, /comments/);
    assert.match(engineSqlProblem('id = 1 /* x */')!, /comments/);
  });

  test('takes linear time on long inputs', () => {
    const long = 'a$'.repeat(200_000) + ' = 1';
    assert.equal(engineSqlProblem(long), undefined);
  });
});
