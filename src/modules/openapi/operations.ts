import { z } from 'zod';
import * as rq from '../../common/request-schemas';
import * as dataplaneSchemas from '../dataplane/dataplane.schemas';
import * as S from '../../common/response-schemas';

/**
 * What the OpenAPI document says about each route, keyed by `METHOD path` as Nest registers it (`{param}` for
 * `:param`; REST-contract paths without BASE_PATH). Routes are found by scanning the controllers
 * (SwaggerModule.createDocument); this table only adds what the code cannot tell: names, texts, schemas, who may
 * call. A route missing here is still documented (see openapi.document.ts), with the Lance spec's operationId when
 * its path and method are a spec operation's (lance-spec-operations.ts).
 */

export type Access = 'catalog' | 'operator' | 'database-admin' | 'public';
export type ErrorStatus = 400 | 401 | 403 | 404 | 406 | 409 | 413 | 415 | 503 | '5XX';
/** A zod schema, or a getter for one that may not exist (schemas of modules still being written). */
export type SchemaSource = z.ZodType | (() => z.ZodType | undefined);
export type JsonSchema = Record<string, unknown>;

export interface ParamDoc {
  name: string;
  in: 'query' | 'header' | 'path';
  description: string;
  required?: boolean;
  schema: JsonSchema;
  style?: 'form' | 'simple';
  explode?: boolean;
}

export type BodyDoc =
  | { kind: 'json'; schema: SchemaSource; name: string; required?: boolean; description?: string }
  | { kind: 'arrow-stream'; description: string };

export interface ResponseDoc {
  description: string;
  /** A JSON answer; `name` makes it a named component. */
  schema?: SchemaSource;
  name?: string;
  /** A non-JSON answer (Arrow IPC file, text). */
  raw?: { contentType: string; schema: JsonSchema };
  headers?: Record<string, { description: string; schema: JsonSchema }>;
}

export interface OperationDoc {
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  access: Access;
  /** Catalog routes: the least role needed (default read). */
  role?: 'read' | 'write' | 'admin';
  /** Path parameters by the name the route uses; `rename` shows it under another name (the spec's). */
  pathParams?: Record<string, { description: string; rename?: string }>;
  query?: ParamDoc[];
  headers?: ParamDoc[];
  body?: BodyDoc;
  responses: Record<string, ResponseDoc>;
  errors: ErrorStatus[];
}

/** A schema of the data plane's module, looked up when the document is built (that module is still changing). */
function dataplane(name: string): () => z.ZodType | undefined {
  return () => {
    const s = (dataplaneSchemas as Record<string, unknown>)[name];
    return s instanceof z.ZodType ? s : undefined;
  };
}

// ---------------------------------------------------------------------------------------------- shared pieces

export const ID_DESCRIPTION =
  'Object identifier: the parts of its path joined by `delimiter` (default `$`), percent-encoded ' +
  '(`["sales", "orders"]` → `sales%24orders`). The delimiter alone (`%24`) is the root namespace. Parts may use ' +
  'letters, digits, `_`, `-` and `.`.';

export const DELIMITER: ParamDoc = {
  name: 'delimiter',
  in: 'query',
  description:
    'Separator of the parts of `{id}` (and of the identifiers ListAllTables answers). Optional; default `$`. ' +
    'May be longer than one character (`::`).',
  schema: { type: 'string', default: '$' },
};
const PAGE_TOKEN: ParamDoc = {
  name: 'page_token',
  in: 'query',
  description: 'Opaque token from the previous page\'s answer (start after it).',
  schema: { type: 'string' },
};
const LIMIT: ParamDoc = {
  name: 'limit',
  in: 'query',
  description: 'Largest number of items in the answer; default LIST_DEFAULT_LIMIT, capped at LIST_MAX_LIMIT.',
  schema: { type: 'integer', minimum: 0 },
};
const INCLUDE_DECLARED: ParamDoc = {
  name: 'include_declared',
  in: 'query',
  description: 'Include declared tables that have no data yet (default true).',
  schema: { type: 'boolean', default: true },
};
const boolQuery = (name: string, description: string, def = false): ParamDoc => ({
  name,
  in: 'query',
  description,
  schema: { type: 'boolean', default: def },
});
const stringQuery = (name: string, description: string, required = false): ParamDoc => ({
  name,
  in: 'query',
  description,
  required,
  schema: { type: 'string' },
});
const TIMEOUT_HEADER: ParamDoc = {
  name: 'x-request-timeout-ms',
  in: 'header',
  description: 'Gives up on the operation after this many milliseconds.',
  schema: { type: 'integer', minimum: 1 },
};

/** The database headers of every REST-contract route (mission: tenancy). */
export const DATABASE_HEADERS: ParamDoc[] = [
  {
    name: 'x-service-database',
    in: 'header',
    description:
      'The database (tenant) addressed. `x-lancedb-database` (what the official clients send) is accepted too. ' +
      'Needed unless the host name selects the database (TENANT_HOST_SUFFIX); a header and a host that disagree → 400.',
    schema: { type: 'string' },
  },
  {
    name: 'x-service-database-prefix',
    in: 'header',
    description:
      'Selects a separate catalog inside the database, with its own namespace tree and storage folder ' +
      '(alias `x-lancedb-database-prefix`, sent by the official client for `db://acme/team1`).',
    schema: { type: 'string' },
  },
];

export const REQUEST_ID_HEADER: ParamDoc = {
  name: 'x-request-id',
  in: 'header',
  description: 'Request id (`[A-Za-z0-9._:-]{1,128}`); echoed in the response header and in error bodies\' `instance`. Generated when absent.',
  schema: { type: 'string' },
};

const ARROW_STREAM = 'application/vnd.apache.arrow.stream';
const ARROW_FILE = 'application/vnd.apache.arrow.file';
const VERSION_HEADER = { 'x-lancedb-version': { description: 'the table version read', schema: { type: 'integer' } } };

const CATALOG_ERRORS: ErrorStatus[] = [400, 401, 403, 404, 503, '5XX'];
const WITH_CONFLICT: ErrorStatus[] = [400, 401, 403, 404, 409, 503, '5XX'];
const ARROW_ERRORS: ErrorStatus[] = [400, 401, 403, 404, 409, 413, 415, 503, '5XX'];
const OPERATOR_ERRORS: ErrorStatus[] = [400, 401, 403, 404, 503, '5XX'];

const ok = (description: string, schema?: SchemaSource, name?: string): Record<string, ResponseDoc> => ({
  200: { description, schema, name },
});

// ---------------------------------------------------------------------------------------------- the table

export const OPERATIONS: Record<string, OperationDoc> = {
  // ------------------------------------------------------------------ namespaces
  'POST /v1/namespace/{id}/create': {
    operationId: 'CreateNamespace',
    summary: 'Create a new namespace',
    description:
      '`mode` `Create` (409 if it exists), `ExistOk` or `Overwrite` (drops its contents), case-insensitive, ' +
      'PascalCase or snake_case. The parent must exist (404). Properties are stored and returned with an added `created_at`.',
    tag: 'Namespace',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: rq.CreateNamespaceBody, name: 'CreateNamespaceRequest' },
    responses: ok('The namespace', S.CreateNamespaceResponse, 'CreateNamespaceResponse'),
    errors: WITH_CONFLICT,
  },
  'GET /v1/namespace/{id}/list': {
    operationId: 'ListNamespaces',
    summary: 'List namespaces',
    description: 'Direct children of namespace `{id}`, by name, sorted and paginated. 404 when `{id}` does not exist.',
    tag: 'Namespace',
    access: 'catalog',
    query: [PAGE_TOKEN, LIMIT],
    responses: ok('Child namespaces', S.ListNamespacesResponse, 'ListNamespacesResponse'),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/namespace/{id}/describe': {
    operationId: 'DescribeNamespace',
    summary: 'Describe a namespace',
    tag: 'Namespace',
    access: 'catalog',
    body: { kind: 'json', schema: rq.IdOnlyBody, name: 'DescribeNamespaceRequest' },
    responses: ok('The namespace', S.DescribeNamespaceResponse, 'DescribeNamespaceResponse'),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/namespace/{id}/exists': {
    operationId: 'NamespaceExists',
    summary: 'Check if a namespace exists',
    description: '200 with no body when it exists, 404 (code 1) when not. The root namespace always exists.',
    tag: 'Namespace',
    access: 'catalog',
    body: { kind: 'json', schema: rq.IdOnlyBody, name: 'NamespaceExistsRequest' },
    responses: { 200: { description: 'It exists (no body)' } },
    errors: CATALOG_ERRORS,
  },
  'POST /v1/namespace/{id}/drop': {
    operationId: 'DropNamespace',
    summary: 'Drop a namespace',
    description:
      '`mode` `Fail` (a missing namespace → 400) or `Skip` (→ 204); `behavior` `Restrict` (contents → 409, code 3, ' +
      'nothing dropped) or `Cascade` (drops everything inside; a long deletion answers with `transaction_id`).',
    tag: 'Namespace',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: rq.DropNamespaceBody, name: 'DropNamespaceRequest' },
    responses: {
      200: { description: 'Dropped', schema: S.DropNamespaceResponse, name: 'DropNamespaceResponse' },
      204: { description: 'mode Skip and the namespace did not exist (no body)' },
    },
    errors: WITH_CONFLICT,
  },

  // ------------------------------------------------------------------ tables (catalog)
  'GET /v1/namespace/{id}/table/list': {
    operationId: 'ListTables',
    summary: 'List tables in a namespace',
    description: 'Tables directly in namespace `{id}`, by name, sorted and paginated.',
    tag: 'Table',
    access: 'catalog',
    query: [PAGE_TOKEN, LIMIT, INCLUDE_DECLARED],
    responses: ok('Table names', S.ListTablesResponse, 'ListTablesResponse'),
    errors: CATALOG_ERRORS,
  },
  'GET /v1/table': {
    operationId: 'ListAllTables',
    summary: 'List all tables',
    description: 'Every table of the database, in every namespace, as full identifiers joined by `delimiter`; keyset-paginated.',
    tag: 'Table',
    access: 'catalog',
    query: [DELIMITER, PAGE_TOKEN, LIMIT, INCLUDE_DECLARED],
    responses: ok('Table identifiers', S.ListTablesResponse, 'ListTablesResponse'),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/declare': {
    operationId: 'DeclareTable',
    summary: 'Declare a table',
    description:
      'Creates the catalog entry and an empty folder the client writes the Lance data to (`location`). The server ' +
      'chooses the location: a different `location` in the body → 400.',
    tag: 'Table',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: rq.DeclareTableBody, name: 'DeclareTableRequest' },
    responses: ok('The declared table', S.DeclareTableResponse, 'DeclareTableResponse'),
    errors: WITH_CONFLICT,
  },
  'POST /v1/table/{id}/register': {
    operationId: 'RegisterTable',
    summary: 'Register a table to a namespace',
    description:
      'Registers existing Lance data under a name. `location` is relative to the database\'s folder (no `..`, no ' +
      'absolute paths or URIs). `mode` `Create` (409 if the name exists) or `Overwrite`.',
    tag: 'Table',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: rq.RegisterTableBody, name: 'RegisterTableRequest' },
    responses: ok('The registered table', S.RegisterTableResponse, 'RegisterTableResponse'),
    errors: WITH_CONFLICT,
  },
  'POST /v1/table/{id}/describe': {
    operationId: 'DescribeTable',
    summary: 'Describe information of a table',
    description: 'A query parameter overrides the body field of the same name.',
    tag: 'Table',
    access: 'catalog',
    query: [
      boolQuery('with_table_uri', 'Include `table_uri` (always included by this gateway).'),
      boolQuery('load_detailed_metadata', 'Also report `is_only_declared`.'),
      boolQuery('check_declared', 'Report `is_only_declared`.'),
    ],
    body: { kind: 'json', schema: rq.DescribeTableBody, name: 'DescribeTableRequest' },
    responses: ok('The table', S.DescribeTableResponse, 'DescribeTableResponse'),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/exists': {
    operationId: 'TableExists',
    summary: 'Check if a table exists',
    description: '200 with no body when it exists (declared tables too), 404 (code 4, or 1 for a missing namespace) when not.',
    tag: 'Table',
    access: 'catalog',
    body: { kind: 'json', schema: rq.IdOnlyBody, name: 'TableExistsRequest' },
    responses: { 200: { description: 'It exists (no body)' } },
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/drop': {
    operationId: 'DropTable',
    summary: 'Drop a table',
    description: 'Removes the table and deletes its data. A request body is ignored.',
    tag: 'Table',
    access: 'catalog',
    role: 'write',
    responses: ok('The dropped table', S.DropTableResponse, 'DropTableResponse'),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/deregister': {
    operationId: 'DeregisterTable',
    summary: 'Deregister a table',
    description: 'Removes the table from the catalog and keeps its data (it can be registered again).',
    tag: 'Table',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: rq.IdOnlyBody, name: 'DeregisterTableRequest' },
    responses: ok('The deregistered table', S.DeregisterTableResponse, 'DeregisterTableResponse'),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/rename': {
    operationId: 'RenameTable',
    summary: 'Rename a table',
    description: 'Renames in the catalog (across namespaces too with `new_namespace_id`); the data stays in place.',
    tag: 'Table',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: rq.RenameTableBody, name: 'RenameTableRequest' },
    responses: ok('Renamed (an empty object)', S.RenameTableResponse, 'RenameTableResponse'),
    errors: WITH_CONFLICT,
  },
  'POST /v1/table/{id}/stats': {
    operationId: 'GetTableStats',
    summary: 'Get table statistics',
    description: 'Read from the table\'s data. `branch` from the body, or else from the query.',
    tag: 'Table',
    access: 'catalog',
    query: [stringQuery('branch', 'Branch to read (when the body has none).')],
    body: { kind: 'json', schema: rq.StatsBody, name: 'GetTableStatsRequest' },
    responses: ok('Statistics', S.GetTableStatsResponse, 'GetTableStatsResponse'),
    errors: CATALOG_ERRORS,
  },
  'GET /v1/table/{id}/stats': {
    operationId: 'GetTableStatsWithGet',
    summary: 'Get table statistics (GET)',
    description: 'GetTableStats as the reference adapter serves it (GET, no body).',
    tag: 'Table',
    access: 'catalog',
    query: [stringQuery('branch', 'Branch to read.')],
    responses: ok('Statistics', S.GetTableStatsResponse, 'GetTableStatsResponse'),
    errors: CATALOG_ERRORS,
  },

  // ------------------------------------------------------------------ transactions
  'POST /v1/transaction/{id}/describe': {
    operationId: 'DescribeTransaction',
    summary: 'Describe information about a transaction',
    description: 'Status of a long-running operation (a cascade drop) by the `transaction_id` it answered.',
    tag: 'Transaction',
    access: 'catalog',
    pathParams: { id: { description: 'The transaction id, as answered (not split by `delimiter`).' } },
    body: { kind: 'json', schema: rq.IdOnlyBody, name: 'DescribeTransactionRequest' },
    responses: ok('The transaction', S.DescribeTransactionResponse, 'DescribeTransactionResponse'),
    errors: CATALOG_ERRORS,
  },

  // ------------------------------------------------------------------ data plane
  'POST /v1/table/{id}/create': {
    operationId: 'CreateTable',
    summary: 'Create a table with the given name',
    description:
      'Creates (or, by `mode`, keeps or overwrites) a table from an Arrow IPC stream. A new table is streamed into ' +
      'storage and registered when complete; a declared table gets its first version at its declared location.',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    query: [
      stringQuery('mode', '`create` (default; 409 if the table has data), `exist_ok` or `overwrite`; case-insensitive.'),
      stringQuery('properties', 'Table properties as one JSON-encoded object of strings.'),
    ],
    body: { kind: 'arrow-stream', description: 'The rows, as an Arrow IPC stream (the content type is not required).' },
    responses: ok('The table', S.CreateTableResponse, 'CreateTableResponse'),
    errors: ARROW_ERRORS,
  },
  'POST /v1/table/{id}/insert': {
    operationId: 'InsertIntoTable',
    summary: 'Insert records into a table',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    query: [stringQuery('mode', '`append` (default) or `overwrite`; case-insensitive.')],
    body: { kind: 'arrow-stream', description: 'The rows, as an Arrow IPC stream.' },
    responses: ok('Inserted', S.InsertIntoTableResponse, 'InsertIntoTableResponse'),
    errors: ARROW_ERRORS,
  },
  'POST /v1/table/{id}/merge_insert': {
    operationId: 'MergeInsertIntoTable',
    summary: 'Merge insert (upsert) records into a table',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    query: [
      {
        name: 'on',
        in: 'query',
        required: true,
        description: 'Key column(s) to match on; repeat (`on=a&on=b`) for a composite key.',
        schema: { type: 'array', items: { type: 'string' }, minItems: 1 },
        style: 'form',
        explode: true,
      },
      boolQuery('when_matched_update_all', 'Update matched rows.'),
      stringQuery('when_matched_update_all_filt', 'Update matched rows that satisfy this SQL condition.'),
      boolQuery('when_not_matched_insert_all', 'Insert rows without a match.'),
      boolQuery('when_not_matched_by_source_delete', 'Delete target rows the source does not have.'),
      stringQuery('when_not_matched_by_source_delete_filt', 'Delete such rows that satisfy this SQL condition.'),
      boolQuery('use_index', 'Use an index on the key columns (default true).', true),
    ],
    headers: [TIMEOUT_HEADER],
    body: { kind: 'arrow-stream', description: 'The source rows, as an Arrow IPC stream.' },
    responses: ok('Merged', S.MergeInsertIntoTableResponse, 'MergeInsertIntoTableResponse'),
    errors: ARROW_ERRORS,
  },
  'POST /v1/table/{id}/count_rows': {
    operationId: 'CountTableRows',
    summary: 'Count rows in a table',
    tag: 'Table data',
    access: 'catalog',
    body: { kind: 'json', schema: dataplane('CountRowsBody'), name: 'CountTableRowsRequest' },
    responses: {
      200: { description: 'The row count (a bare JSON number)', schema: S.CountTableRowsResponse, headers: VERSION_HEADER },
    },
    errors: CATALOG_ERRORS,
  },
  'GET /v1/table/{id}/count_rows': {
    operationId: 'CountTableRowsWithGet',
    summary: 'Count rows in a table (GET)',
    description: 'CountTableRows as the official client sends it (GET, no body).',
    tag: 'Table data',
    access: 'catalog',
    query: [
      stringQuery('predicate', 'SQL filter: count only matching rows.'),
      { name: 'version', in: 'query', description: 'Table version to count.', schema: { type: 'integer', minimum: 0 } },
    ],
    responses: {
      200: { description: 'The row count (a bare JSON number)', schema: S.CountTableRowsResponse, headers: VERSION_HEADER },
    },
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/query': {
    operationId: 'QueryTable',
    summary: 'Query a table',
    description:
      'Vector, full-text or plain queries, in the spec\'s shapes or the official remote client\'s (bare `vector` and ' +
      '`columns`). Answers an Arrow IPC file.',
    tag: 'Table data',
    access: 'catalog',
    headers: [TIMEOUT_HEADER],
    body: { kind: 'json', schema: dataplane('QueryBody'), name: 'QueryTableRequest' },
    responses: {
      200: {
        description: 'The result rows',
        raw: { contentType: ARROW_FILE, schema: { type: 'string', format: 'binary' } },
        headers: VERSION_HEADER,
      },
    },
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/explain_plan': {
    operationId: 'ExplainTableQueryPlan',
    summary: 'Get query execution plan explanation',
    tag: 'Table data',
    access: 'catalog',
    body: { kind: 'json', schema: dataplane('ExplainBody'), name: 'ExplainTableQueryPlanRequest' },
    responses: ok('The plan', S.ExplainTableQueryPlanResponse),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/update': {
    operationId: 'UpdateTable',
    summary: 'Update rows in a table',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: dataplane('UpdateBody'), name: 'UpdateTableRequest' },
    responses: ok('Updated', S.UpdateTableResponse, 'UpdateTableResponse'),
    errors: WITH_CONFLICT,
  },
  'POST /v1/table/{id}/delete': {
    operationId: 'DeleteFromTable',
    summary: 'Delete rows from a table',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: dataplane('DeleteBody'), name: 'DeleteFromTableRequest' },
    responses: ok('Deleted', S.DeleteFromTableResponse, 'DeleteFromTableResponse'),
    errors: WITH_CONFLICT,
  },
  'POST /v1/table/{id}/create_index': {
    operationId: 'CreateTableIndex',
    summary: 'Create an index on a table',
    description: 'Builds the index before answering.',
    tag: 'Index',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: dataplane('CreateIndexBody'), name: 'CreateTableIndexRequest' },
    responses: ok('Created (an empty object)', S.EmptyResponse, 'EmptyResponse'),
    errors: WITH_CONFLICT,
  },
  'POST /v1/table/{id}/index/list': {
    operationId: 'ListTableIndices',
    summary: 'List indexes on a table',
    tag: 'Index',
    access: 'catalog',
    body: { kind: 'json', schema: dataplane('VersionBody'), name: 'ListTableIndicesRequest' },
    responses: ok('The indexes', S.ListTableIndicesResponse, 'ListTableIndicesResponse'),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/index/{name}/stats': {
    operationId: 'DescribeTableIndexStats',
    summary: 'Get table index statistics',
    tag: 'Index',
    access: 'catalog',
    pathParams: { name: { rename: 'index_name', description: 'Name of the index.' } },
    body: { kind: 'json', schema: dataplane('VersionBody'), name: 'DescribeTableIndexStatsRequest' },
    responses: ok('Index statistics', S.DescribeTableIndexStatsResponse, 'DescribeTableIndexStatsResponse'),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/index/{name}/drop': {
    operationId: 'DropTableIndex',
    summary: 'Drop a specific index',
    tag: 'Index',
    access: 'catalog',
    role: 'write',
    pathParams: { name: { rename: 'index_name', description: 'Name of the index.' } },
    responses: ok('Dropped (an empty object)', S.EmptyResponse, 'EmptyResponse'),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/version/list': {
    operationId: 'ListTableVersions',
    summary: 'List all versions of a table',
    description: 'A request body is ignored.',
    tag: 'Table data',
    access: 'catalog',
    responses: ok('The versions', S.ListTableVersionsResponse, 'ListTableVersionsResponse'),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/table/{id}/restore': {
    operationId: 'RestoreTable',
    summary: 'Restore table to a specific version',
    description: 'Writes a new version equal to `version`.',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: dataplane('VersionBody'), name: 'RestoreTableRequest' },
    responses: ok('Restored', S.VersionResponse, 'VersionResponse'),
    errors: WITH_CONFLICT,
  },
  'POST /v1/table/{id}/add_columns': {
    operationId: 'AlterTableAddColumns',
    summary: 'Add new columns to table schema',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: dataplane('AddColumnsBody'), name: 'AlterTableAddColumnsRequest' },
    responses: ok('Added', S.VersionResponse, 'VersionResponse'),
    errors: WITH_CONFLICT,
  },
  'POST /v1/table/{id}/alter_columns': {
    operationId: 'AlterTableAlterColumns',
    summary: 'Modify existing columns',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: dataplane('AlterColumnsBody'), name: 'AlterTableAlterColumnsRequest' },
    responses: ok('Altered', S.VersionResponse, 'VersionResponse'),
    errors: WITH_CONFLICT,
  },
  'POST /v1/table/{id}/drop_columns': {
    operationId: 'AlterTableDropColumns',
    summary: 'Remove columns from table schema',
    tag: 'Table data',
    access: 'catalog',
    role: 'write',
    body: { kind: 'json', schema: dataplane('DropColumnsBody'), name: 'AlterTableDropColumnsRequest' },
    responses: ok('Dropped', S.VersionResponse, 'VersionResponse'),
    errors: WITH_CONFLICT,
  },

  // ------------------------------------------------------------------ Enterprise routes (mission §4.7)
  'GET /v1/tables': {
    operationId: 'EnterpriseListTables',
    summary: 'List all tables (Enterprise)',
    description: 'Same answer as ListAllTables.',
    tag: 'Enterprise',
    access: 'catalog',
    query: [DELIMITER, PAGE_TOKEN, LIMIT, INCLUDE_DECLARED],
    responses: ok('Table identifiers', S.ListTablesResponse, 'ListTablesResponse'),
    errors: CATALOG_ERRORS,
  },
  'POST /v1/tables/{name}': {
    operationId: 'EnterpriseCreateTable',
    summary: 'Create a table from an Arrow stream (Enterprise)',
    description: 'Streams the body into a new table in the root namespace; 409 when the name exists, 413 above the limit.',
    tag: 'Enterprise',
    access: 'catalog',
    role: 'write',
    pathParams: { name: { description: 'Table name (letters, digits, `_`, `-`, `.`).' } },
    body: { kind: 'arrow-stream', description: 'The rows, as an Arrow IPC stream.' },
    responses: { 201: { description: 'Created', schema: S.EnterpriseCreateTableResponse, name: 'EnterpriseCreateTableResponse' } },
    errors: ARROW_ERRORS,
  },

  // ------------------------------------------------------------------ operator API
  'POST /admin/v1/databases': {
    operationId: 'CreateDatabase',
    summary: 'Create a database (tenant)',
    tag: 'Operator',
    access: 'operator',
    body: { kind: 'json', schema: rq.CreateDatabaseBody, name: 'CreateDatabaseRequest', required: true },
    responses: { 201: { description: 'Created', schema: S.Database, name: 'Database' } },
    errors: [400, 401, 403, 409, 503, '5XX'],
  },
  'GET /admin/v1/databases': {
    operationId: 'ListDatabases',
    summary: 'List databases',
    tag: 'Operator',
    access: 'operator',
    query: [PAGE_TOKEN, LIMIT],
    responses: ok('Databases, by name', S.ListDatabasesResponse, 'ListDatabasesResponse'),
    errors: [400, 401, 403, 503, '5XX'],
  },
  'GET /admin/v1/databases/{name}': {
    operationId: 'DescribeDatabase',
    summary: 'Describe a database',
    tag: 'Operator',
    access: 'operator',
    pathParams: { name: { description: 'Database name.' } },
    responses: ok('The database', S.Database, 'Database'),
    errors: OPERATOR_ERRORS,
  },
  'PATCH /admin/v1/databases/{name}': {
    operationId: 'UpdateDatabase',
    summary: 'Change a database\'s properties or rate limit',
    description: 'A changed rate limit applies on every replica within AUTH_CACHE_TTL_MS.',
    tag: 'Operator',
    access: 'operator',
    pathParams: { name: { description: 'Database name.' } },
    body: { kind: 'json', schema: rq.UpdateDatabaseBody, name: 'UpdateDatabaseRequest', required: true },
    responses: ok('The database', S.Database, 'Database'),
    errors: OPERATOR_ERRORS,
  },
  'DELETE /admin/v1/databases/{name}': {
    operationId: 'DeleteDatabase',
    summary: 'Delete a database',
    description: 'Removes its catalog, API keys and storage folder.',
    tag: 'Operator',
    access: 'operator',
    pathParams: { name: { description: 'Database name.' } },
    responses: { 204: { description: 'Deleted (no body)' } },
    errors: OPERATOR_ERRORS,
  },
  'POST /admin/v1/databases/{name}/api-keys': {
    operationId: 'CreateApiKey',
    summary: 'Issue an API key',
    description: 'The secret (`api_key`) is shown only in this answer.',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: { name: { description: 'Database name.' } },
    body: { kind: 'json', schema: rq.CreateKeyBody, name: 'CreateApiKeyRequest', required: true },
    responses: { 201: { description: 'Issued', schema: S.IssuedApiKey, name: 'IssuedApiKey' } },
    errors: OPERATOR_ERRORS,
  },
  'GET /admin/v1/databases/{name}/api-keys': {
    operationId: 'ListApiKeys',
    summary: 'List a database\'s API keys',
    description: 'Revoked keys stay listed, with `revoked_at`. Never the secrets.',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: { name: { description: 'Database name.' } },
    responses: ok('The keys', S.ListApiKeysResponse, 'ListApiKeysResponse'),
    errors: OPERATOR_ERRORS,
  },
  'DELETE /admin/v1/databases/{name}/api-keys/{id}': {
    operationId: 'RevokeApiKey',
    summary: 'Revoke an API key',
    description: 'Refused at once on this replica, within AUTH_CACHE_TTL_MS on every other.',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: { name: { description: 'Database name.' }, id: { description: 'Key id (as issued / listed).' } },
    responses: { 204: { description: 'Revoked (no body)' } },
    errors: OPERATOR_ERRORS,
  },
  'GET /admin/v1/databases/{name}/audit': {
    operationId: 'ListAuditEvents',
    summary: 'Audit trail of a database',
    description: 'Who created, dropped or renamed what, and when; newest first.',
    tag: 'Operator',
    access: 'database-admin',
    pathParams: { name: { description: 'Database name.' } },
    query: [PAGE_TOKEN, LIMIT],
    responses: ok('Events', S.AuditTrailResponse, 'AuditTrailResponse'),
    errors: OPERATOR_ERRORS,
  },

  // ------------------------------------------------------------------ health and observability
  'GET /healthz': {
    operationId: 'Liveness',
    summary: 'Liveness',
    description: 'No I/O. Never authenticated, never throttled.',
    tag: 'Health',
    access: 'public',
    responses: ok('Alive', S.LivenessResponse, 'LivenessResponse'),
    errors: [],
  },
  'GET /readyz': {
    operationId: 'Readiness',
    summary: 'Readiness',
    description: '503 while the catalog database does not answer. Never authenticated, never throttled.',
    tag: 'Health',
    access: 'public',
    responses: ok('Ready', S.ReadinessResponse, 'ReadinessResponse'),
    errors: [503],
  },
  'GET /metrics': {
    operationId: 'GetMetrics',
    summary: 'Prometheus metrics',
    description:
      'Prometheus text exposition format. Never throttled. When METRICS_API_KEY is set, the key is required as ' +
      '`Authorization: Bearer <key>` or `x-api-key` (else 401); otherwise open. Series carry a `database` label only ' +
      'with METRICS_DATABASE_LABELS=true.',
    tag: 'Observability',
    access: 'public',
    responses: { 200: { description: 'Metrics', raw: { contentType: 'text/plain; version=0.0.4', schema: { type: 'string' } } } },
    errors: [401],
  },
};
