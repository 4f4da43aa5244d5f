import * as path from 'node:path';
import { ApiError, Errors } from '../../platform/http/errors';

/**
 * The native Lance engine reports every failure as an Error whose message is all there is to go on. This is the one
 * place that reads those messages: an ordered table, first match wins, each row turning one kind of engine failure
 * into the answer docs/rest-contract.md §7 prescribes. What the caller caused (a bad filter or expression,
 * parameters the engine cannot work with, a schema that does not fit) is a 4xx; what nobody caused (a panic in the
 * native code, a storage failure, a message no row knows) is an EngineFault, answered 500 with the request id and
 * logged once, with its stack, by the exception filter.
 *
 * Each row's messages are real ones, captured from @lancedb/lancedb 0.39 (lance 12), in test/unit/engine-errors.test.ts.
 */

/** A failure of the engine itself, not of the request: 500, logged with its stack. */
export class EngineFault extends Error {
  constructor(
    message: string,
    readonly rule: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'EngineFault';
    const cause = options?.cause as Error | undefined;
    if (cause?.stack) this.stack = `${this.name}: ${message}\n    caused by ${cause.stack}`;
  }
}

/** What the caller asked for, where the engine's message does not say it (a branch name). */
export interface EngineErrorContext {
  branch?: string;
}

export interface EngineErrorRule {
  /** Named for tests and logs. */
  readonly name: string;
  readonly test: RegExp;
  /** The answer, from the cleaned message; 'fault' → EngineFault (500). */
  readonly to: ((detail: string, context: EngineErrorContext) => ApiError) | 'fault';
}

const badRequest = (detail: string) => Errors.invalidInput(detail);

/** Ordered: earlier rows are more specific than later ones (a panic message may contain any words). */
export const ENGINE_ERROR_RULES: readonly EngineErrorRule[] = [
  // A panic caught at the native boundary (`todo!()`, a failed unwrap, …) or an error the engine itself calls
  // internal: an engine bug, whatever triggered it.
  {
    name: 'engine-bug',
    test: /^not (?:yet )?implemented\b|Panic in async function|panicked at|entered unreachable code|called `(?:Option|Result)::unwrap\(\)`|Encountered internal error/,
    to: 'fault',
  },
  // Another writer committed first: retryable, as the clients retry 409 ConcurrentModification.
  {
    name: 'commit-conflict',
    test: /Retryable commit conflict|Incompatible transaction|CommitConflict|TooMuchWriteContention|preempted by concurrent transaction/i,
    to: Errors.concurrentModification,
  },
  // Tags and branches (Lance refs): 'Ref not found error: tag v1 does not exist', 'Ref conflict error: tag v1 already
  // exists', 'Ref not found error: Branch dev does not exist', 'Ref conflict error: Branch dev is referenced by tags …'.
  { name: 'tag-not-found', test: /Ref not found error: tag \S+ does not exist/, to: Errors.tagNotFound },
  { name: 'tag-exists', test: /Ref conflict error: tag \S+ already exists/, to: Errors.tagAlreadyExists },
  { name: 'branch-ref-not-found', test: /Ref not found error: Branch \S+ does not exist/i, to: Errors.branchNotFound },
  // Two creates of one branch at once: the loser finds the branch's folder written ('Dataset already exists: …/tree/x').
  {
    name: 'branch-exists',
    test: /Dataset already exists: \S*\/tree\/\S+/,
    to: (d) => Errors.branchAlreadyExists(d.replace(/^.*\/tree\//, 'branch already exists: ')),
  },
  { name: 'branch-in-use', test: /Ref conflict error: Branch \S+ is referenced by/i, to: Errors.invalidTableState },
  // A version of a branch (or main) named as `<branch>:<version>`, as tag operations report it.
  { name: 'ref-version-not-found', test: /Version not found error: version \S+ does not exist/, to: Errors.tableVersionNotFound },
  // A field path that names no field (update_field_metadata).
  { name: 'field-not-found', test: /Field '[^']*' not found\./, to: Errors.columnNotFound },
  { name: 'index-exists', test: /Index name '[^']*' already exists|index with name .* already exists/i, to: Errors.indexAlreadyExists },
  { name: 'index-not-found', test: /Lance index not found|Index '[^']*' not found|no index named/i, to: Errors.indexNotFound },
  // A concurrent creator wrote the table first.
  { name: 'table-exists', test: /Dataset already exists|Table '[^']*' already exists/i, to: Errors.tableAlreadyExists },
  {
    name: 'branch-invalid',
    test: /Ref is invalid: /,
    to: (d, c) =>
      Errors.invalidInput(`invalid branch name${c.branch === undefined ? '' : ` '${c.branch}'`}: ${d.replace(/^.*Ref is invalid: /, '')}`),
  },
  // A branch name that is no path segment the object store accepts (`.`, `a/./b`): the caller's input, not storage.
  {
    name: 'branch-path-invalid',
    test: /Error parsing Path "[^"]*\/tree\/[^"]*"/,
    to: (_d, c) =>
      Errors.invalidInput(
        `invalid branch name${c.branch === undefined ? '' : ` '${c.branch}'`}: a branch name cannot have '.' or empty segments`,
      ),
  },
  // A version a table (or branch) does not have: the engine names its manifest, which for a branch's version is under
  // `tree/<branch>/_versions` too, so before branch-not-found; the answer names the version, not the manifest's path.
  {
    name: 'version-not-found',
    test: /_versions\/\d+\.manifest was not found|Version \d+ (?:not found|does not exist)|version \d+ does not exist/i,
    to: (d, c) => {
      const v = /_versions\/(\d+)\.manifest|version (\d+)/i.exec(d);
      const version = v ? `version ${v[1] ?? v[2]}` : 'version';
      return Errors.tableVersionNotFound(`${version}${c.branch === undefined ? '' : ` of branch '${c.branch}'`} not found`);
    },
  },
  {
    name: 'branch-not-found',
    // The branch name may hold blanks and quotes (`x'); DROP …`): anything up to its `/_versions` (the folder itself).
    test: /Not found: \S*\/tree\/[^\n]+?\/_versions\b(?!\/)/,
    to: (_d, c) => Errors.branchNotFound(c.branch === undefined ? 'branch not found' : `branch '${c.branch}' not found`),
  },
  // The catalog names a location whose data is gone (dropped meanwhile, or removed behind the gateway's back).
  {
    name: 'table-data-missing',
    test: /Table '[^']*' was not found|Dataset at path \S+ was not found/,
    to: () => Errors.tableNotFound('table data not found'),
  },
  // Rows whose columns do not fit the table's schema.
  {
    name: 'schema-mismatch',
    test: /field '[^']*' does not exist in table schema|Found field not in schema|Append with different schema|SchemaMismatch|does not match the schema/i,
    to: Errors.schemaValidation,
  },
  { name: 'duplicate-field', test: /Duplicate field name/, to: badRequest },
  // Any other schema the engine refuses (e.g. a top-level column named `a.b`): the caller's input, not a server fault.
  { name: 'schema-refused', test: /LanceError\(Schema\): /, to: Errors.schemaValidation },
  // The request's bytes are not an Arrow IPC stream the engine can read (before any storage-failure row below).
  {
    name: 'bad-arrow',
    test: /Failed to read (?:record batch from )?IPC file|Arrow error: (?:Parser|Invalid argument|Io) error|Ipc error/i,
    to: badRequest,
  },
  // Parameters the engine cannot work with (e.g. more IVF partitions than rows).
  { name: 'unprocessable', test: /Unprocessable: |Not enough rows to train/i, to: badRequest },
  // A name the store cannot hold as a file (a tag or branch of hundreds of characters): the caller's input.
  {
    name: 'name-too-long',
    test: /File name too long|ENAMETOOLONG|os error 36\b/,
    to: () => Errors.invalidInput('a tag or branch name is too long for the store'),
  },
  // Storage failing under the engine: nothing the caller can change.
  {
    name: 'storage-failure',
    test: /LanceError\(IO\)|No space left on device|Permission denied|Too many open files|Object store error/i,
    to: 'fault',
  },
  // Bad filters, expressions and SQL; unknown columns; unsupported combinations.
  {
    name: 'invalid-input',
    test: /Invalid input|Invalid user input|InvalidInput|Error parsing|sql parser error|Error during planning|Schema error|Schema Error|LanceError\(Schema\)|LanceError\(Index\)|LanceError\(Arrow\)|Cast error|not supported|NotSupported|Unsupported|Execution error|does not exist|Failed to create .* query|Field path/i,
    to: badRequest,
  },
];

/**
 * The engine's message as the caller may see it: no server paths (the engine writes them with and without the
 * leading slash), no Rust source locations, the repeated "Caused by" chain cut, bounded.
 */
export function cleanEngineMessage(message: string, storageRoots?: string | string[]): string {
  let m = message;
  for (const storageRoot of typeof storageRoots === 'string' ? [storageRoots] : (storageRoots ?? [])) {
    const root = storageRoot.includes('://') ? storageRoot.replace(/\/+$/, '') : path.resolve(storageRoot);
    for (const r of [root, root.replace(/^\/+/, '')].filter((x) => x.length > 1))
      m = m
        .split(r + '/')
        .join('')
        .split(r)
        .join('');
  }
  m = m
    .replace(/,?\s*\/\S*?\.rs:\d+:\d+/g, '') // ", /usr/local/cargo/registry/…/planner.rs:513:18"
    .split(/\s+Caused by:\s*/)[0]
    .replace(/(^|[\s:(=])\/(?:[^\s,'"()/]+\/)+[^\s,'"()]*/g, '$1<path>') // any other server path
    .replace(/^(?:lance error: )/, '')
    .replace(/\s+/g, ' ')
    .trim();
  return m.slice(0, 1000) || 'engine error';
}

/** The rule an engine message falls under; undefined → no row knows it (an EngineFault). */
export function engineErrorRule(message: string): EngineErrorRule | undefined {
  return ENGINE_ERROR_RULES.find((r) => r.test.test(message));
}

/** An engine failure as the error to throw: an ApiError for what the caller caused, an EngineFault otherwise. */
export function translateEngineError(
  err: unknown,
  storageRoot?: string | string[],
  context: EngineErrorContext = {},
): ApiError | EngineFault {
  if (err instanceof ApiError || err instanceof EngineFault) return err;
  const raw = err instanceof Error ? err.message : String(err);
  const detail = cleanEngineMessage(raw, storageRoot);
  const rule = engineErrorRule(raw);
  if (!rule || rule.to === 'fault') {
    return new EngineFault(`storage engine failure (${rule?.name ?? 'unclassified'}): ${detail}`, rule?.name ?? 'unclassified', {
      cause: err,
    });
  }
  return rule.to(detail, context);
}
