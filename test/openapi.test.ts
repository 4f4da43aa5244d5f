import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Controller, Get, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import * as arrow from 'apache-arrow';
import { parse } from 'yaml';
import { ROOT } from './helpers/root';
import type { AppConfig } from '../src/platform/config/config';
import { buildOpenApiDocument } from '../src/modules/openapi';
import {
  ADMIN_KEY,
  Api,
  CATALOG_KINDS,
  eventually,
  idPath,
  newTenant,
  operator,
  Reply,
  startGateway,
  Tenant,
  TestGateway,
} from './helpers/gateway';

/**
 * The OpenAPI document (GET /openapi.json, /docs): what it covers, and how its Lance operations compare with the
 * official Lance Namespace spec (test/fixtures/lance-namespace-spec.yaml, release 0.11.1; see test/fixtures/README.md). Every difference must be in
 * ALLOWED_DIFFERENCES below, with its reason; an entry that no longer matches anything fails too, so the list
 * stays true.
 */

type Json = Record<string, any>;
type Kind =
  | 'not-served' // a spec operation we do not serve
  | 'operation-id' // served, under another operationId
  | 'param-missing' // a spec path/query parameter we do not take
  | 'param-extra' // a path/query parameter we take that the spec does not define
  | 'param-type'
  | 'body' // request body present on one side only, or with other content types
  | 'body-missing' // a spec request-body property we do not read
  | 'body-extra' // a request-body property we read that the spec does not define
  | 'body-type'
  | 'status-missing' // a spec success status we never answer
  | 'status-extra' // a success status we answer that the spec does not list
  | 'response' // success answer with another content type, or another non-object type
  | 'response-missing' // a spec response property we never send
  | 'response-extra' // a response property we send that the spec does not define
  | 'extra-route'; // a /v1 route of ours that is no spec operation (name: "METHOD path")

interface Allowed {
  /** Spec operationId, or '*' for every operation. */
  op: string;
  kind: Kind;
  /** Property or parameter (`query:branch`), status, or route; '' when the kind needs none. */
  name: string;
  reason: string;
}

const allow = (op: string, kind: Kind, name: string, reason: string): Allowed => ({ op, kind, name, reason });

/** Deliberate differences from the Lance Namespace spec (0.11.1). One line of reason each. */
const ALLOWED_DIFFERENCES: Allowed[] = [
  // ---- operations we do not serve: none (what the engine cannot do answers 406 code 0, see below)

  // ---- every operation
  allow('*', 'response-missing', 'context', 'the REST binding carries context as response headers, never in the body (spec Context)'),
  allow('*', 'response-missing', 'transaction_id', 'our operations complete before answering; only DropNamespace may answer one'),
  allow('*', 'body-type', 'identity', 'data-plane bodies accept any `identity` value and ignore it (credentials come from the headers)'),
  allow('*', 'body-type', 'context', 'data-plane bodies accept any `context` value and ignore it'),

  // ---- namespaces
  allow('DropNamespace', 'status-extra', '204', 'mode Skip on a missing namespace answers 204, as docs/rest-contract.md §4.3 requires'),

  // ---- tables (catalog)
  allow('DescribeTable', 'response-missing', 'stats', 'not filled (nor by the reference); GetTableStats serves them'),
  allow('DescribeTable', 'response-missing', 'metadata', 'Lance table metadata is not reported'),
  allow('TableExists', 'body-missing', 'version', 'existence is of the table, whatever version is asked'),
  allow('RenameTable', 'body-extra', 'new_namespace', "the official remote client's name for new_namespace_id"),
  allow('GetTableStats', 'param-extra', 'query:branch', '`branch` is also read from the query (as the GET form takes it)'),

  // ---- served, but always 406 (code 0): what the engine cannot do
  allow(
    'CreateMaterializedView',
    'body',
    '',
    'always 406 (code 0): the open Lance engine has no materialized views, so the body is not read',
  ),
  allow(
    'CreateMaterializedView',
    'response',
    '201',
    'never answered: always 406 (code 0), the open Lance engine has no materialized views',
  ),
  allow(
    'RefreshMaterializedView',
    'body',
    '',
    'always 406 (code 0): the open Lance engine has no materialized views, so the body is not read',
  ),
  allow(
    'RefreshMaterializedView',
    'response',
    '202',
    'never answered: always 406 (code 0), the open Lance engine has no materialized views',
  ),
  allow(
    'AlterTransaction',
    'body',
    '',
    'always 406 (code 0) or 404: our only transactions are clean-ups of committed cascade drops, which cannot be altered',
  ),
  allow(
    'AlterTransaction',
    'response',
    '200',
    'never answered: always 406 (code 0) or 404 (clean-ups of committed cascade drops cannot be altered)',
  ),
  allow('AlterTransaction', 'param-missing', 'query:delimiter', '{id} is the transaction id as answered, never split'),

  // ---- transactions
  allow('DescribeTransaction', 'param-missing', 'query:delimiter', '{id} is the transaction id as answered, never split'),

  // ---- data plane
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'concurrency',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'intra_applier_concurrency',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'min_checkpoint_size',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'max_checkpoint_size',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'batch_checkpoint_flush_interval_seconds',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'read_version',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'task_size',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'num_frags',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'checkpoint_size',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'commit_granularity',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'cluster',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'AlterTableBackfillColumns',
    'body-missing',
    'manifest',
    'tuning of a distributed backfill; the engine fills the column in one pass',
  ),
  allow(
    'CreateTable',
    'param-missing',
    'query:storage_options',
    "a table's storage options are its profile's (STORAGE_PROFILES), chosen by the operator, not per request",
  ),
  allow(
    'DropTable',
    'response-extra',
    'job_id',
    "the official remote client's async drop: set when deleting the files outlasts DROP_SYNC_BUDGET_MS (dropTableAsync waits on the job)",
  ),
  allow('CreateTable', 'response-extra', 'name', 'a new table also reports its name and rows written (as the Enterprise route)'),
  allow('CreateTable', 'response-extra', 'num_rows', 'a new table also reports its name and rows written (as the Enterprise route)'),
  allow(
    'InsertIntoTable',
    'param-extra',
    'query:upload_id',
    'a part of a multipart write of the official remote client (staged, committed at complete)',
  ),
  allow(
    'InsertIntoTable',
    'param-extra',
    'query:upload_part_id',
    'a part of a multipart write of the official remote client (staged, committed at complete)',
  ),
  allow(
    'MergeInsertIntoTable',
    'param-missing',
    'query:timeout',
    'the time limit is the `x-request-timeout-ms` header (what the official client sends)',
  ),
  allow('MergeInsertIntoTable', 'param-type', 'query:on', '`on` may repeat for a composite key, as the reference and the newest client do'),
  allow('MergeInsertIntoTable', 'response-extra', 'num_attempts', 'commit attempts, reported by the Lance engine'),
  allow('CountTableRows', 'body-extra', 'filter', 'alias of `predicate` sent by older remote clients'),
  allow('QueryTable', 'body-extra', 'minimum_nprobes', 'search tuning of the official remote client'),
  allow('QueryTable', 'body-extra', 'maximum_nprobes', 'search tuning of the official remote client'),
  allow('QueryTable', 'body-type', 'vector', "also the remote client's bare vector (array) or list of vectors"),
  allow('QueryTable', 'body-type', 'columns', "also the remote client's bare list of names or alias map"),
  allow('QueryTable', 'body-type', 'k', 'any non-negative number is accepted (the remote client may send a float)'),
  allow('UpdateTable', 'body-missing', 'properties', 'table properties are not changed by UpdateTable'),
  allow('UpdateTable', 'response-missing', 'properties', 'table properties are not changed by UpdateTable'),
  allow('UpdateTable', 'response-extra', 'rows_updated', 'the official remote client reads this name'),
  allow('DeleteFromTable', 'response-extra', 'num_deleted_rows', 'the official remote client reads the deleted count'),
  // UpdateTableSchemaMetadata is served but answers 406 (code 0): the engine binding cannot replace schema metadata.
  allow(
    'AnalyzeTableQueryPlan',
    'param-extra',
    'query:distributed_metrics',
    'sent by the official remote client; one process here, so ignored',
  ),
  allow('AnalyzeTableQueryPlan', 'body-extra', 'minimum_nprobes', 'search tuning of the official remote client (as QueryTable)'),
  allow('AnalyzeTableQueryPlan', 'body-extra', 'maximum_nprobes', 'search tuning of the official remote client (as QueryTable)'),
  allow('AnalyzeTableQueryPlan', 'body-type', 'vector', "also the remote client's bare vector (as QueryTable)"),
  allow('AnalyzeTableQueryPlan', 'body-type', 'columns', "also the remote client's bare list of names or alias map (as QueryTable)"),
  allow('AnalyzeTableQueryPlan', 'body-type', 'k', 'any non-negative number is accepted (as QueryTable)'),
  allow(
    'CreateTableScalarIndex',
    'body-missing',
    'target_partition_size',
    'not supported by the Lance engine binding we use (as CreateTableIndex)',
  ),
  allow('CreateTableScalarIndex', 'body-extra', 'replace', 'official remote client field (as CreateTableIndex)'),
  allow('CreateTableScalarIndex', 'body-extra', 'metric_type', 'same body as CreateTableIndex'),
  allow('CreateTableScalarIndex', 'body-extra', 'custom_stop_words', 'FTS option (same body as CreateTableIndex)'),
  allow('CreateTableScalarIndex', 'body-extra', 'ngram_min_length', 'NGRAM option (same body as CreateTableIndex)'),
  allow('CreateTableScalarIndex', 'body-extra', 'ngram_max_length', 'NGRAM option (same body as CreateTableIndex)'),
  allow('CreateTableScalarIndex', 'body-extra', 'prefix_only', 'NGRAM option (same body as CreateTableIndex)'),
  allow('CreateTableIndex', 'body-missing', 'target_partition_size', 'not supported by the Lance engine binding we use'),
  allow('CreateTableIndex', 'body-extra', 'replace', 'official remote client field'),
  allow('CreateTableIndex', 'body-extra', 'metric_type', 'official remote client field (older name of distance_type)'),
  allow('CreateTableIndex', 'body-extra', 'custom_stop_words', 'FTS option of the official remote client'),
  allow('CreateTableIndex', 'body-extra', 'ngram_min_length', 'NGRAM option of the official remote client'),
  allow('CreateTableIndex', 'body-extra', 'ngram_max_length', 'NGRAM option of the official remote client'),
  allow('CreateTableIndex', 'body-extra', 'prefix_only', 'NGRAM option of the official remote client'),
  allow('ListTableIndices', 'body-missing', 'page_token', 'all indexes in one answer (tables have few)'),
  allow('ListTableIndices', 'body-missing', 'limit', 'all indexes in one answer (tables have few)'),
  allow('ListTableIndices', 'response-missing', 'page_token', 'all indexes in one answer (tables have few)'),
  allow('DescribeTableIndexStats', 'body-missing', 'index_name', 'the index name is the path parameter'),
  allow('RestoreTable', 'response-extra', 'version', 'reports the new version the restore wrote'),

  // ---- our routes that are no spec operation
  allow('*', 'extra-route', 'GET /v1/credential', 'who am I: the calling credential (docs/access-control.md); no spec operation'),
  allow('ListTables', 'param-extra', 'query:prefix', 'Enterprise extension: names starting with it (one index range)'),
  allow('*', 'extra-route', 'GET /v1/table/{id}/maintenance', 'table maintenance policy (docs/maintenance.md); no spec operation'),
  allow(
    '*',
    'extra-route',
    'POST /v1/table/{id}/maintenance/run',
    "run a table's maintenance now (docs/maintenance.md); no spec operation",
  ),
  allow('*', 'extra-route', 'GET /v1/table/{id}/stats', 'GetTableStats as the reference adapter serves it'),
  allow(
    '*',
    'extra-route',
    'GET /v1/table/{id}/count_rows',
    'count_rows is served as GET (what the official client sends) and POST (the spec)',
  ),
  allow(
    '*',
    'extra-route',
    'GET /v1/table/{id}/tags/list',
    'ListTableTags as the reference adapter and the generated namespace clients send it',
  ),
  allow(
    '*',
    'extra-route',
    'POST /v1/table/{id}/clone',
    'CloneTable of the official remote client (cloneTable); the spec has no clone operation',
  ),
  allow(
    '*',
    'extra-route',
    'POST /v1/table/{id}/multipart_write/create',
    'multipart writes of the official remote client (phalanx-version 0.4.0); no spec operation',
  ),
  allow(
    '*',
    'extra-route',
    'POST /v1/table/{id}/multipart_write/complete',
    'multipart writes of the official remote client (phalanx-version 0.4.0); no spec operation',
  ),
  allow(
    '*',
    'extra-route',
    'POST /v1/table/{id}/multipart_write/abort',
    'multipart writes of the official remote client (phalanx-version 0.4.0); no spec operation',
  ),
  allow(
    '*',
    'extra-route',
    'POST /v1/table/{id}/branches/diff',
    "the official remote client's branch diff; always 406 (code 0): the open engine diffs branches only for Enterprise tables",
  ),
  allow(
    '*',
    'extra-route',
    'POST /v1/table/{id}/branches/cherry_pick',
    "the official remote client's cherry-pick; always 406 (code 0): the open engine cherry-picks only for Enterprise tables",
  ),
  allow('*', 'extra-route', 'GET /v1/tables', 'Enterprise route (docs/rest-contract.md §4.7)'),
  allow('*', 'extra-route', 'POST /v1/tables/{name}', 'Enterprise route (docs/rest-contract.md §4.7)'),
  allow('*', 'extra-route', 'POST /v1/jobs/list', "the official remote client's jobs route (listJobs); not in the namespace spec"),
  allow(
    '*',
    'extra-route',
    'POST /v1/jobs/describe',
    "the official remote client's jobs route (openJob, Job.wait); not in the namespace spec",
  ),
  allow(
    '*',
    'extra-route',
    'POST /v1/jobs/query_events',
    "the official remote client's Job.events(): answered 406, events are not recorded",
  ),
  allow('*', 'extra-route', 'POST /v1/dropped_tables/list', 'soft-deleted tables (docs/soft-delete.md); the spec has no undrop'),
  allow(
    '*',
    'extra-route',
    'POST /v1/dropped_tables/{dropped_id}/undrop',
    'soft-deleted tables (docs/soft-delete.md); the spec has no undrop',
  ),
  allow(
    '*',
    'extra-route',
    'POST /v1/dropped_tables/{dropped_id}/purge',
    'soft-deleted tables (docs/soft-delete.md); the spec has no purge',
  ),
  allow(
    '*',
    'extra-route',
    'POST /v1/table/{id}/protection',
    'the protection flag (docs/soft-delete.md); the spec has no property update of tables',
  ),
  allow(
    '*',
    'extra-route',
    'POST /v1/namespace/{id}/protection',
    'the protection flag (docs/soft-delete.md); the spec has no property update of namespaces',
  ),
  allow('*', 'extra-route', 'POST /v1/jobs/cancel', "the official remote client's jobs route (cancelJob); not in the namespace spec"),
];

/** The §7 error body against the spec's ErrorResponse. */
const ALLOWED_ERROR_BODY_DIFFERENCES: Record<string, string> = {
  'extra:type': "problem-details field (docs/rest-contract.md §7), alongside the spec's code and error",
  'extra:title': 'problem-details field (docs/rest-contract.md §7)',
  'extra:status': 'problem-details field (docs/rest-contract.md §7)',
  'missing:context': 'context travels as response headers in the REST binding',
};

// ---------------------------------------------------------------------------------------------- schema helpers

const SPEC_FILE = process.env.LANCE_SPEC_FILE ?? path.join(ROOT, 'test', 'fixtures', 'lance-namespace-spec.yaml');

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Follows local `$ref`s (`#/components/...`) inside `doc`. */
function deref(doc: Json, node: any): any {
  let n = node;
  for (let i = 0; n && typeof n === 'object' && typeof n.$ref === 'string' && i < 20; i++) {
    n = n.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: any, k: string) => o?.[k], doc);
  }
  return n;
}

/** The types a schema admits, `null` left out (both sides treat null as absent); 'any' when unconstrained. */
function typeOf(doc: Json, schema: any): string {
  const types = new Set<string>();
  const visit = (s: any, depth: number) => {
    s = deref(doc, s);
    if (!s || typeof s !== 'object' || depth > 10) return types.add('any');
    let found = false;
    if (typeof s.type === 'string') {
      types.add(s.type);
      found = true;
    }
    if (Array.isArray(s.type)) {
      s.type.forEach((t: string) => types.add(t));
      found = true;
    }
    for (const k of ['anyOf', 'oneOf']) {
      if (Array.isArray(s[k])) {
        s[k].forEach((x: any) => visit(x, depth + 1));
        found = true;
      }
    }
    if (!found && Array.isArray(s.allOf)) {
      s.allOf.forEach((x: any) => visit(x, depth + 1));
      found = true;
    }
    if (!found && s.properties) {
      types.add('object');
      found = true;
    }
    if (!found && s.const === null) {
      types.add('null');
      found = true;
    }
    if (!found) types.add('any');
  };
  visit(schema, 0);
  types.delete('null');
  if (types.has('any')) return 'any';
  return [...types].sort().join('|') || 'null';
}

/** Top-level properties of an object schema (allOf merged; a nullable object's members), or null if none. */
function propertiesOf(doc: Json, schema: any): Record<string, any> | null {
  const s = deref(doc, schema);
  if (!s || typeof s !== 'object') return null;
  if (s.properties) return s.properties;
  if (Array.isArray(s.allOf)) return Object.assign({}, ...s.allOf.map((x: any) => propertiesOf(doc, x) ?? {}));
  for (const k of ['anyOf', 'oneOf']) {
    if (Array.isArray(s[k])) {
      const objects = s[k].map((x: any) => propertiesOf(doc, x)).filter(Boolean);
      if (objects.length === 1) return objects[0];
    }
  }
  return null;
}

const shape = (p: string) => p.replace(/\{[^}]+\}/g, '{}');

interface Op {
  doc: Json;
  method: string;
  path: string;
  op: Json;
  params: Json[];
}

function operationsOf(doc: Json): Op[] {
  const out: Op[] = [];
  for (const [p, item] of Object.entries<Json>(doc.paths)) {
    for (const m of METHODS) {
      if (!item[m]) continue;
      const params = [...(item.parameters ?? []), ...(item[m].parameters ?? [])].map((x: Json) => deref(doc, x));
      out.push({ doc, method: m.toUpperCase(), path: p, op: item[m], params });
    }
  }
  return out;
}

interface Difference {
  op: string;
  kind: Kind;
  name: string;
  detail: string;
}

/** Differences between one spec operation and ours at the same method and path. */
function compareOperation(spec: Op, ours: Op): Difference[] {
  const id = spec.op.operationId as string;
  const out: Difference[] = [];
  const diff = (kind: Kind, name: string, detail: string) => out.push({ op: id, kind, name, detail });

  if (ours.op.operationId !== id) diff('operation-id', String(ours.op.operationId), `ours is named ${ours.op.operationId}`);

  // Parameters: path and query (the spec defines no header parameters; its identity headers are security schemes).
  const paramMap = (o: Op) =>
    new Map(o.params.filter((p) => p.in === 'path' || p.in === 'query').map((p) => [`${p.in}:${p.name}`, p] as const));
  const sp = paramMap(spec);
  const op = paramMap(ours);
  for (const [k, p] of sp) {
    const q = op.get(k);
    if (!q) diff('param-missing', k, `spec parameter ${k} (${typeOf(spec.doc, p.schema)}) not taken`);
    else if (typeOf(spec.doc, p.schema) !== typeOf(ours.doc, q.schema)) {
      diff('param-type', k, `spec ${typeOf(spec.doc, p.schema)}, ours ${typeOf(ours.doc, q.schema)}`);
    }
  }
  for (const k of op.keys()) if (!sp.has(k)) diff('param-extra', k, `we take ${k}, the spec does not define it`);

  // Request body.
  const specBody = deref(spec.doc, spec.op.requestBody);
  const ourBody = deref(ours.doc, ours.op.requestBody);
  const specTypes = Object.keys(specBody?.content ?? {})
    .sort()
    .join(',');
  const ourTypes = Object.keys(ourBody?.content ?? {})
    .sort()
    .join(',');
  if (specTypes !== ourTypes) diff('body', '', `spec body [${specTypes}], ours [${ourTypes}]`);
  else if (specBody?.content?.['application/json']) {
    const sProps = propertiesOf(spec.doc, specBody.content['application/json'].schema) ?? {};
    const oProps = propertiesOf(ours.doc, ourBody.content['application/json'].schema) ?? {};
    for (const [k, s] of Object.entries(sProps)) {
      if (!(k in oProps)) diff('body-missing', k, `spec body property ${k} (${typeOf(spec.doc, s)}) not read`);
      else if (typeOf(spec.doc, s) !== typeOf(ours.doc, oProps[k])) {
        diff('body-type', k, `body property ${k}: spec ${typeOf(spec.doc, s)}, ours ${typeOf(ours.doc, oProps[k])}`);
      }
    }
    for (const k of Object.keys(oProps))
      if (!(k in sProps)) diff('body-extra', k, `we read body property ${k}, the spec does not define it`);
  }

  // Success answers.
  const success = (o: Op) => Object.keys(o.op.responses ?? {}).filter((s) => /^2/.test(s));
  const sOk = success(spec);
  const oOk = success(ours);
  for (const s of sOk) if (!oOk.includes(s)) diff('status-missing', s, `spec success status ${s} never answered`);
  for (const s of oOk) if (!sOk.includes(s)) diff('status-extra', s, `we answer ${s}, the spec does not list it`);
  for (const s of sOk.filter((x) => oOk.includes(x))) {
    const sr = deref(spec.doc, spec.op.responses[s]);
    const or = deref(ours.doc, ours.op.responses[s]);
    const sTypes = Object.keys(sr?.content ?? {})
      .sort()
      .join(',');
    const oTypes = Object.keys(or?.content ?? {})
      .sort()
      .join(',');
    if (sTypes !== oTypes) {
      diff('response', s, `spec ${s} content [${sTypes}], ours [${oTypes}]`);
      continue;
    }
    const sSchema = sr?.content?.['application/json']?.schema;
    if (!sSchema) continue;
    const oSchema = or.content['application/json'].schema;
    const sProps = propertiesOf(spec.doc, sSchema);
    const oProps = propertiesOf(ours.doc, oSchema);
    if (!sProps || !oProps) {
      if (typeOf(spec.doc, sSchema) !== typeOf(ours.doc, oSchema)) {
        diff('response', s, `spec answers ${typeOf(spec.doc, sSchema)}, ours ${typeOf(ours.doc, oSchema)}`);
      }
      continue;
    }
    for (const k of Object.keys(sProps)) if (!(k in oProps)) diff('response-missing', k, `spec response property ${k} never sent`);
    for (const k of Object.keys(oProps))
      if (!(k in sProps)) diff('response-extra', k, `we send response property ${k}, the spec does not define it`);
  }
  return out;
}

const matches = (a: Allowed, d: Difference) => a.kind === d.kind && a.name === d.name && (a.op === '*' || a.op === d.op);

/**
 * Problems of `value` against `schema`: a small JSON Schema subset (type, properties, required,
 * additionalProperties, items, anyOf/oneOf/allOf, enum, const, $ref), enough for the documented answers.
 */
function conformance(doc: Json, schema: any, value: unknown, at: string): string[] {
  const s = deref(doc, schema);
  if (!s || typeof s !== 'object') return [];
  for (const k of ['anyOf', 'oneOf']) {
    if (Array.isArray(s[k])) {
      const results: string[][] = s[k].map((x: any) => conformance(doc, x, value, at));
      if (!results.some((r) => r.length === 0)) return [`${at}: matches none of ${k} (${results.map((r) => r[0]).join(' | ')})`];
    }
  }
  if (Array.isArray(s.allOf)) return s.allOf.flatMap((x: any) => conformance(doc, x, value, at));
  if (s.type) {
    const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
    const actual = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
    if (!types.some((t) => t === actual || (t === 'integer' && Number.isInteger(value)))) {
      return [`${at}: expected ${types.join('|')}, got ${actual} ${JSON.stringify(value)?.slice(0, 80)}`];
    }
  }
  const problems: string[] = [];
  if ('const' in s && value !== s.const) problems.push(`${at}: expected ${JSON.stringify(s.const)}`);
  if (Array.isArray(s.enum) && !s.enum.includes(value)) problems.push(`${at}: ${JSON.stringify(value)} not in ${JSON.stringify(s.enum)}`);
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const props = s.properties ?? {};
    for (const r of s.required ?? []) if (!(r in value)) problems.push(`${at}.${r}: required, missing`);
    for (const [k, v] of Object.entries(value)) {
      if (props[k]) problems.push(...conformance(doc, props[k], v, `${at}.${k}`));
      else if (s.additionalProperties === false) problems.push(`${at}.${k}: sent but not documented`);
      else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        problems.push(...conformance(doc, s.additionalProperties, v, `${at}.${k}`));
      }
    }
  }
  if (Array.isArray(value) && s.items) value.forEach((v, i) => problems.push(...conformance(doc, s.items, v, `${at}[${i}]`)));
  return problems;
}

/** Every `$ref` in `node` (recursively). */
function refsOf(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((x) => refsOf(x, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refsOf(v, out);
    }
  }
  return out;
}

/** An Arrow IPC stream of rows `id` from..from+n-1 with a `name` column. */
function arrowRows(from: number, n: number): Buffer {
  const table = new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => from + i)),
    name: arrow.vectorFromArray(
      Array.from({ length: n }, (_, i) => `name-${from + i}`),
      new arrow.Utf8(),
    ),
  });
  return Buffer.from(arrow.tableToIPC(table, 'stream'));
}

// ---------------------------------------------------------------------------------------------- tests

const kind = CATALOG_KINDS.includes('postgres') || CATALOG_KINDS.length === 0 ? 'postgres' : CATALOG_KINDS[0];

describe(`OpenAPI document [${kind}]`, () => {
  let gw: TestGateway;
  let doc: Json;
  let spec: Json;
  let tenant: Tenant;

  before(async () => {
    gw = await startGateway(kind);
    tenant = await newTenant(gw);
    const res = await new Api(gw.url).get('/openapi.json');
    assert.equal(res.status, 200, res.text);
    doc = res.body;
    assert.ok(fs.existsSync(SPEC_FILE), `the Lance Namespace spec is expected at ${SPEC_FILE} (or set LANCE_SPEC_FILE)`);
    spec = parse(fs.readFileSync(SPEC_FILE, 'utf8'));
  });
  after(() => gw?.close());

  it('serves an OpenAPI 3 document of the REST contract, the operator API, health and the data plane', () => {
    assert.match(String(doc.openapi), /^3\./);
    assert.ok(doc.info?.title && doc.info?.version);
    const ops = operationsOf(doc);
    const byRoute = new Map(ops.map((o) => [`${o.method} ${o.path}`, o.op]));
    for (const [route, id] of [
      ['POST /v1/namespace/{id}/create', 'CreateNamespace'],
      ['GET /v1/table', 'ListAllTables'],
      ['POST /v1/transaction/{id}/describe', 'DescribeTransaction'],
      ['POST /admin/v1/databases', 'CreateDatabase'],
      ['DELETE /admin/v1/databases/{name}/api-keys/{id}', 'RevokeApiKey'],
      ['PATCH /admin/v1/databases/{name}/api-keys/{id}', 'UpdateApiKey'],
      ['POST /admin/v1/databases/{name}/api-keys/{id}/rotate', 'RotateApiKey'],
      ['GET /healthz', 'Liveness'],
      ['GET /readyz', 'Readiness'],
      ['GET /openapi.json', 'GetOpenApiDocument'],
    ]) {
      assert.equal(byRoute.get(route)?.operationId, id, `${route} is documented as ${id}`);
    }
    const ids = ops.map((o) => o.op.operationId);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    for (const o of ops) {
      assert.ok(o.op.summary, `${o.method} ${o.path} has a summary`);
      for (const name of [...o.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])) {
        assert.ok(
          o.params.some((p) => p.in === 'path' && p.name === name && p.required === true),
          `${o.method} ${o.path} declares {${name}}`,
        );
      }
    }
    // Request bodies come from the zod schemas: CreateNamespace's reads mode and properties, RegisterTable needs location.
    const create = deref(doc, byRoute.get('POST /v1/namespace/{id}/create')!.requestBody.content['application/json'].schema);
    assert.ok(create.properties.mode && create.properties.properties);
    const register = deref(doc, byRoute.get('POST /v1/table/{id}/register')!.requestBody.content['application/json'].schema);
    assert.deepEqual(register.required, ['location']);
  });

  it('describes {id}, delimiter and the database headers on the REST contract', () => {
    for (const o of operationsOf(doc).filter((x) => x.path.startsWith('/v1/'))) {
      const names = o.params.map((p) => `${p.in}:${p.name}`);
      assert.ok(names.includes('header:x-service-database'), `${o.method} ${o.path}: x-service-database`);
      assert.ok(names.includes('header:x-service-database-prefix'), `${o.method} ${o.path}: x-service-database-prefix`);
      const id = o.params.find((p) => p.in === 'path' && p.name === 'id');
      if (id && !o.path.startsWith('/v1/transaction/')) {
        assert.match(id.description, /delimiter/, `${o.method} ${o.path}: {id} is described`);
        const delimiter = o.params.find((p) => p.in === 'query' && p.name === 'delimiter');
        assert.ok(delimiter?.description, `${o.method} ${o.path}: delimiter is described`);
        assert.equal(delimiter.schema.default, '$');
      }
    }
  });

  it('declares the security schemes and applies them per route', () => {
    const schemes = doc.components.securitySchemes;
    assert.deepEqual(
      { type: schemes.ApiKeyAuth.type, in: schemes.ApiKeyAuth.in, name: schemes.ApiKeyAuth.name },
      {
        type: 'apiKey',
        in: 'header',
        name: 'x-api-key',
      },
    );
    assert.equal(schemes.BearerAuth.type, 'http');
    assert.equal(schemes.BearerAuth.scheme, 'bearer');
    assert.equal(schemes.BearerAuth.bearerFormat, 'JWT');
    assert.equal(schemes.OperatorKeyAuth.type, 'apiKey');
    assert.equal(schemes.OperatorKeyAuth.name, 'x-api-key');
    for (const o of operationsOf(doc)) {
      const names = (o.op.security ?? [])
        .flatMap((s: Json) => Object.keys(s))
        .sort()
        .join(',');
      if (o.path.startsWith('/v1/')) assert.equal(names, 'ApiKeyAuth,BearerAuth', `${o.method} ${o.path}`);
      else if (
        /^\/admin\/v1\/(databases(\/\{name\}(\/maintenance|\/event-sinks)?)?|usage(\/top-storage|\/history)?|health|event-sinks.*)$/.test(
          o.path,
        )
      )
        assert.equal(names, 'OperatorKeyAuth', `${o.method} ${o.path}`);
      else if (o.path.startsWith('/admin/')) assert.equal(names, 'ApiKeyAuth,BearerAuth,OperatorKeyAuth', `${o.method} ${o.path}`);
      else if (o.path === '/metrics') assert.deepEqual(o.op.security, [{ MetricsKeyAuth: [] }, {}], 'the metrics key, or none when unset');
      else assert.deepEqual(o.op.security, [], `${o.method} ${o.path} is public`);
    }
  });

  it('has the §7 ErrorResponse schema, referenced by every 4xx/5xx answer', () => {
    const schema = doc.components.schemas.ErrorResponse;
    assert.ok(schema, 'ErrorResponse schema');
    for (const f of ['code', 'type', 'title', 'status', 'detail', 'instance', 'error']) {
      assert.ok(schema.properties[f], `ErrorResponse.${f}`);
      assert.ok(schema.required.includes(f), `ErrorResponse.${f} is always sent`);
    }
    assert.equal(schema.properties.code.type, 'integer');
    assert.equal(schema.properties.status.type, 'integer');
    let count = 0;
    for (const o of operationsOf(doc)) {
      for (const [status, r] of Object.entries<Json>(o.op.responses)) {
        if (!/^[45]/.test(status)) continue;
        count++;
        assert.equal(
          deref(doc, r).content['application/json'].schema.$ref,
          '#/components/schemas/ErrorResponse',
          `${o.method} ${o.path} ${status}`,
        );
      }
    }
    assert.ok(count > 100, `error answers documented (${count})`);
  });

  it("documents the error body like an actual error answer, with the spec's fields plus the problem-details ones", async () => {
    const res = await tenant.api.post('/v1/namespace/no_such_ns/describe', {});
    assert.equal(res.status, 404);
    assert.deepEqual(Object.keys(res.body).sort(), Object.keys(doc.components.schemas.ErrorResponse.properties).sort());
    const ours = Object.keys(doc.components.schemas.ErrorResponse.properties);
    const theirs = Object.keys(spec.components.schemas.ErrorResponse.properties);
    const found = [
      ...ours.filter((k) => !theirs.includes(k)).map((k) => `extra:${k}`),
      ...theirs.filter((k) => !ours.includes(k)).map((k) => `missing:${k}`),
    ];
    assert.deepEqual(found.sort(), Object.keys(ALLOWED_ERROR_BODY_DIFFERENCES).sort());
  });

  it('serves the browsable page at /docs', async () => {
    for (const p of ['/docs', '/docs/']) {
      const res = await new Api(gw.url).get(p);
      assert.equal(res.status, 200, p);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(res.text, /<html[\s\S]*swagger-ui/i);
    }
    const init = await new Api(gw.url).get('/docs/swagger-ui-init.js');
    assert.equal(init.status, 200);
    assert.match(init.text, /CreateNamespace/, 'the page loads this document');
  });

  it('documents only routes the gateway answers', async () => {
    const probe = async (method: string, p: string, headers: Record<string, string>) => {
      const hasBody = method === 'POST' || method === 'PATCH' || method === 'PUT';
      return new Api(gw.url, headers).request(method, p, hasBody ? {} : undefined);
    };
    const unrouted = (r: { status: number; body: any }, method: string) =>
      r.status === 404 && typeof r.body?.detail === 'string' && r.body.detail.startsWith(`Cannot ${method} `);
    // The signature of "no such route", checked on a made-up route.
    assert.ok(unrouted(await probe('POST', '/v1/table/x%24y/no_such_operation', tenant.api.headers), 'POST'));

    const ops = operationsOf(doc);
    assert.ok(ops.length > 40);
    for (const o of ops) {
      const url = o.path
        .replace('{id}', o.path.startsWith('/admin/') ? '00000000-0000-4000-8000-000000000000' : encodeURIComponent('probe_ns$probe_t'))
        .replace('{index_name}', 'probe_idx')
        .replace('{name}', o.path.startsWith('/admin/') ? 'no_such_db_probe' : 'probe_table');
      const headers = o.path.startsWith('/admin/') ? { 'x-api-key': ADMIN_KEY } : o.path.startsWith('/v1/') ? tenant.api.headers : {};
      const res = await probe(o.method, url, headers);
      assert.ok(!unrouted(res, o.method), `${o.method} ${o.path} (${url}) is routed: ${res.status} ${res.text.slice(0, 200)}`);
      assert.notEqual(res.status, 500, `${o.method} ${url}: ${res.text.slice(0, 200)}`);
    }
  });

  it('resolves every $ref of the document', () => {
    const refs = [...new Set(refsOf(doc))];
    assert.ok(refs.length > 20);
    for (const r of refs) assert.ok(r.startsWith('#/') && deref(doc, { $ref: r }), `${r} resolves`);
  });

  it('describes the actual answers: status, content type and body of each call match the document', async () => {
    const ARROW = 'application/vnd.apache.arrow.stream';
    const checked = new Set<string>();
    /** Calls a route, checks the status is the expected one and the answer is as documented for it. */
    const call = async (
      method: string,
      docPath: string,
      url: string,
      expect: number,
      body?: unknown,
      headers: Record<string, string> = tenant.api.headers,
    ): Promise<Reply> => {
      const h: Record<string, string> = { ...headers };
      let payload: string | Buffer | undefined;
      if (Buffer.isBuffer(body)) {
        payload = body;
        h['content-type'] = ARROW;
      } else if (body !== undefined) {
        payload = JSON.stringify(body);
        h['content-type'] = 'application/json';
      }
      const r = await fetch(gw.url + url, { method, headers: h, body: payload });
      const buf = Buffer.from(await r.arrayBuffer());
      const text = buf.toString('utf8');
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      const res: Reply = { status: r.status, headers: r.headers, body: parsed, text };
      assert.equal(res.status, expect, `${method} ${url}: ${text.slice(0, 300)}`);
      const op = doc.paths[docPath]?.[method.toLowerCase()];
      assert.ok(op, `${method} ${docPath} is documented`);
      const documented = deref(doc, op.responses[String(res.status)] ?? op.responses[`${String(res.status)[0]}XX`]);
      assert.ok(documented, `${method} ${docPath}: status ${res.status} is documented`);
      const types = Object.keys(documented.content ?? {});
      if (types.length === 0) assert.equal(text, '', `${method} ${docPath} ${res.status}: documented without a body`);
      else {
        const ct = r.headers.get('content-type') ?? '';
        const type = types.find((t) => ct.startsWith(t.split(';')[0]));
        assert.ok(type, `${method} ${docPath} ${res.status}: content type '${ct}' documented (${types.join(', ')})`);
        if (type === 'application/json') {
          assert.deepEqual(
            conformance(doc, documented.content[type].schema, parsed, 'body'),
            [],
            `${method} ${docPath} ${res.status}: ${text.slice(0, 300)}`,
          );
        }
      }
      checked.add(`${method} ${docPath}`);
      return res;
    };
    const ns = idPath('docs');
    const orders = idPath('docs', 'orders');
    const decl = idPath('docs', 'decl');

    // Namespaces.
    await call('POST', '/v1/namespace/{id}/create', `/v1/namespace/${ns}/create`, 200, { properties: { team: 'a' } });
    await call('GET', '/v1/namespace/{id}/list', '/v1/namespace/%24/list?limit=1', 200);
    await call('POST', '/v1/namespace/{id}/describe', `/v1/namespace/${ns}/describe`, 200, {});
    await call('POST', '/v1/namespace/{id}/exists', `/v1/namespace/${ns}/exists`, 200, {});
    await call('POST', '/v1/namespace/{id}/drop', `/v1/namespace/${idPath('never_made')}/drop`, 204, { mode: 'Skip' });

    // Tables in the catalog, and the data plane.
    await call('POST', '/v1/table/{id}/declare', `/v1/table/${decl}/declare`, 200, {});
    await call('POST', '/v1/table/{id}/create', `/v1/table/${orders}/create`, 200, arrowRows(0, 20));
    await call('POST', '/v1/table/{id}/insert', `/v1/table/${orders}/insert`, 200, arrowRows(20, 5));
    await call(
      'POST',
      '/v1/table/{id}/merge_insert',
      `/v1/table/${orders}/merge_insert?on=id&when_matched_update_all=true&when_not_matched_insert_all=true`,
      200,
      arrowRows(22, 5),
    );
    await call('POST', '/v1/table/{id}/describe', `/v1/table/${orders}/describe?load_detailed_metadata=true`, 200, {});
    await call('POST', '/v1/table/{id}/describe', `/v1/table/${decl}/describe?check_declared=true`, 200, {});
    await call('POST', '/v1/table/{id}/exists', `/v1/table/${orders}/exists`, 200, {});
    await call('GET', '/v1/namespace/{id}/table/list', `/v1/namespace/${ns}/table/list?limit=1`, 200);
    await call('GET', '/v1/table', '/v1/table', 200);
    await call('GET', '/v1/tables', '/v1/tables', 200);
    await call('GET', '/v1/namespace/{id}/table/list', `/v1/namespace/${ns}/table/list?prefix=o`, 200);
    await call('GET', '/v1/credential', '/v1/credential', 200);
    await call('POST', '/v1/table/{id}/stats', `/v1/table/${orders}/stats`, 200, {});
    await call('GET', '/v1/table/{id}/stats', `/v1/table/${orders}/stats`, 200);
    await call('POST', '/v1/table/{id}/count_rows', `/v1/table/${orders}/count_rows`, 200, { predicate: 'id > 3' });
    // Table maintenance (docs/maintenance.md).
    await call('GET', '/v1/table/{id}/maintenance', `/v1/table/${orders}/maintenance`, 200, undefined, tenant.reader.headers);
    await call('POST', '/v1/table/{id}/maintenance/run', `/v1/table/${orders}/maintenance/run`, 200, { type: 'cleanup', dry_run: true });
    await call('POST', '/v1/table/{id}/maintenance/run', `/v1/table/${orders}/maintenance/run`, 200, { type: 'compact' });
    await call(
      'POST',
      '/v1/table/{id}/maintenance/run',
      `/v1/table/${orders}/maintenance/run`,
      403,
      { type: 'compact' },
      tenant.reader.headers,
    );
    await call(
      'POST',
      '/admin/v1/databases/{name}/maintenance/run',
      `/admin/v1/databases/${tenant.name}/maintenance/run`,
      200,
      { table_id: ['docs', 'orders'], type: 'cleanup', dry_run: true },
      operator(gw).headers,
    );
    await call('GET', '/v1/table/{id}/count_rows', `/v1/table/${orders}/count_rows`, 200);
    await call('POST', '/v1/table/{id}/query', `/v1/table/${orders}/query`, 200, { k: 5, filter: 'id < 10', vector: null });
    await call('POST', '/v1/table/{id}/explain_plan', `/v1/table/${orders}/explain_plan`, 200, { query: { k: 5, filter: 'id < 10' } });
    await call('POST', '/v1/table/{id}/update', `/v1/table/${orders}/update`, 200, { updates: [['name', "'x'"]], predicate: 'id = 1' });
    await call('POST', '/v1/table/{id}/delete', `/v1/table/${orders}/delete`, 200, { predicate: 'id = 2' });
    await call('POST', '/v1/table/{id}/create_index', `/v1/table/${orders}/create_index`, 200, {
      column: 'id',
      index_type: 'BTREE',
      name: 'id_idx',
    });
    await call('POST', '/v1/table/{id}/index/list', `/v1/table/${orders}/index/list`, 200, {});
    await call('POST', '/v1/table/{id}/index/{index_name}/stats', `/v1/table/${orders}/index/id_idx/stats`, 200, {});
    await call('POST', '/v1/table/{id}/index/{index_name}/drop', `/v1/table/${orders}/index/id_idx/drop`, 200, {});
    await call('POST', '/v1/table/{id}/version/list', `/v1/table/${orders}/version/list`, 200);
    await call('POST', '/v1/table/{id}/version/describe', `/v1/table/${orders}/version/describe`, 200, { version: 1 });
    await call('POST', '/v1/table/{id}/add_columns', `/v1/table/${orders}/add_columns`, 200, {
      new_columns: [{ name: 'twice', expression: 'id * 2' }],
    });
    await call('POST', '/v1/table/{id}/alter_columns', `/v1/table/${orders}/alter_columns`, 200, {
      alterations: [{ path: 'twice', rename: 'double' }],
    });
    await call('POST', '/v1/table/{id}/drop_columns', `/v1/table/${orders}/drop_columns`, 200, { columns: ['double'] });
    // A computed column, filled by a backfill job; the job routes.
    await call('POST', '/v1/table/{id}/add_columns', `/v1/table/${orders}/add_columns`, 200, {
      new_columns: [{ name: 'triple', computed: '1 + 2' }],
    });
    const job = await call('POST', '/v1/table/{id}/backfill_column', `/v1/table/${orders}/backfill_column`, 202, { column: 'triple' });
    await call('POST', '/v1/jobs/list', '/v1/jobs/list', 200, {});
    const ended = await eventually(async () => {
      const d = await tenant.api.post('/v1/jobs/describe', { job_id: job.body.job_id });
      return d.body.job_state !== 'IN_PROGRESS' && d;
    });
    assert.equal(ended.body.job_state, 'DONE', ended.text);
    await call('POST', '/v1/jobs/describe', '/v1/jobs/describe', 200, { job_id: job.body.job_id });
    await call('POST', '/v1/jobs/cancel', '/v1/jobs/cancel', 200, { job_id: job.body.job_id });
    await call('POST', '/v1/jobs/describe', '/v1/jobs/describe', 404, { job_id: '00000000-0000-4000-8000-000000000000' });
    await call('POST', '/v1/jobs/query_events', '/v1/jobs/query_events', 406, { job_id: job.body.job_id });
    await call('POST', '/v1/table/{id}/drop_columns', `/v1/table/${orders}/drop_columns`, 200, { columns: ['triple'] });
    await call('POST', '/v1/table/{id}/tags/create', `/v1/table/${orders}/tags/create`, 200, { tag: 'v1', version: 1 });
    await call('POST', '/v1/table/{id}/tags/list', `/v1/table/${orders}/tags/list`, 200);
    await call('POST', '/v1/table/{id}/tags/version', `/v1/table/${orders}/tags/version`, 200, { tag: 'v1' });
    await call('GET', '/v1/table/{id}/tags/list', `/v1/table/${orders}/tags/list?limit=5`, 200);
    await call('POST', '/v1/table/{id}/tags/update', `/v1/table/${orders}/tags/update`, 200, { tag: 'v1', version: 2 });
    await call('POST', '/v1/table/{id}/tags/delete', `/v1/table/${orders}/tags/delete`, 200, { tag: 'v1' });
    await call('POST', '/v1/table/{id}/tags/version', `/v1/table/${orders}/tags/version`, 404, { tag: 'v1' });
    await call('POST', '/v1/table/{id}/branches/create', `/v1/table/${orders}/branches/create`, 200, { name: 'dev' });
    await call('POST', '/v1/table/{id}/branches/create', `/v1/table/${orders}/branches/create`, 409, { name: 'dev' });
    await call('POST', '/v1/table/{id}/branches/list', `/v1/table/${orders}/branches/list`, 200);
    await call('POST', '/v1/table/{id}/branches/diff', `/v1/table/${orders}/branches/diff`, 406, { from_branch: 'dev' });
    await call('POST', '/v1/table/{id}/branches/cherry_pick', `/v1/table/${orders}/branches/cherry_pick`, 406, {
      from_branch: 'dev',
      dry_run: true,
    });
    await call('POST', '/v1/table/{id}/branches/delete', `/v1/table/${orders}/branches/delete`, 200, { name: 'dev' });
    await call('POST', '/v1/table/{id}/update_field_metadata', `/v1/table/${orders}/update_field_metadata`, 200, {
      updates: [{ path: 'id', metadata: { unit: 'n' } }],
    });
    await call('POST', '/v1/table/{id}/schema_metadata/update', `/v1/table/${orders}/schema_metadata/update`, 406, { owner: 'a' });
    await call('POST', '/v1/table/{id}/analyze_plan', `/v1/table/${orders}/analyze_plan`, 200, { k: 5, filter: 'id < 10' });
    await call('POST', '/v1/table/{id}/create_scalar_index', `/v1/table/${orders}/create_scalar_index`, 200, {
      column: 'id',
      index_type: 'BITMAP',
      name: 'id_bitmap',
    });
    await call('POST', '/v1/table/{id}/clone', `/v1/table/${idPath('docs', 'orders_clone')}/clone`, 200, {
      source_location: 'docs$orders',
      is_shallow: false,
    });
    const upload = await call('POST', '/v1/table/{id}/multipart_write/create', `/v1/table/${orders}/multipart_write/create`, 200);
    await call(
      'POST',
      '/v1/table/{id}/insert',
      `/v1/table/${orders}/insert?upload_id=${upload.body.upload_id}&upload_part_id=p1`,
      200,
      arrowRows(100, 3),
    );
    await call(
      'POST',
      '/v1/table/{id}/multipart_write/complete',
      `/v1/table/${orders}/multipart_write/complete?upload_id=${upload.body.upload_id}`,
      200,
    );
    await call(
      'POST',
      '/v1/table/{id}/multipart_write/abort',
      `/v1/table/${orders}/multipart_write/abort?upload_id=${upload.body.upload_id}`,
      200,
    );
    await call('POST', '/v1/table/{id}/restore', `/v1/table/${orders}/restore`, 200, { version: 1 });
    await call('POST', '/v1/table/{id}/rename', `/v1/table/${decl}/rename`, 200, { new_table_name: 'decl2' });
    const gone = await call('POST', '/v1/table/{id}/deregister', `/v1/table/${orders}/deregister`, 200, {});
    const relative = path.relative(path.join(gw.config.storageRoot, tenant.name), gone.body.location);
    await call('POST', '/v1/table/{id}/register', `/v1/table/${idPath('docs', 'again')}/register`, 200, { location: relative });
    await call('POST', '/v1/tables/{name}', '/v1/tables/enterprise_t', 201, arrowRows(0, 3));
    await call('POST', '/v1/table/{id}/drop', `/v1/table/${idPath('docs', 'again')}/drop`, 200);
    await call('POST', '/v1/transaction/{id}/describe', '/v1/transaction/00000000-0000-4000-8000-000000000000/describe', 404, {});
    await call('POST', '/v1/transaction/{id}/alter', '/v1/transaction/00000000-0000-4000-8000-000000000000/alter', 404, { actions: [] });
    await call('POST', '/v1/materialized_view/{id}/create', `/v1/materialized_view/${idPath('docs', 'mv')}/create`, 406, { kind: 'query' });
    await call('POST', '/v1/materialized_view/{id}/refresh', `/v1/materialized_view/${idPath('docs', 'mv')}/refresh`, 406, {});

    // Catalog-managed versions (test/managed-versions.test.ts has the official client's commits): a database that
    // enables them, a table whose first version the gateway wrote, recorded in the catalog by naming its manifest.
    const mvOp = operator(gw);
    assert.equal((await mvOp.post('/admin/v1/databases', { name: 'docs_mv', managed_versioning: true })).status, 201);
    const mvKey = (await mvOp.post('/admin/v1/databases/docs_mv/api-keys', { role: 'write' })).body.api_key;
    const mv = { 'x-api-key': mvKey, 'x-service-database': 'docs_mv' };
    const mvT = idPath('mv_t');
    await call('POST', '/v1/table/{id}/create', `/v1/table/${mvT}/create`, 200, arrowRows(0, 3), mv);
    const mvLoc = (await call('POST', '/v1/table/{id}/describe', `/v1/table/${mvT}/describe`, 200, {}, mv)).body.location as string;
    const manifestOf = (v: number) =>
      `${mvLoc.replace(/^\/+/, '')}/_versions/${((1n << 64n) - 1n - BigInt(v)).toString().padStart(20, '0')}.manifest`;
    // The gateway's own write was recorded in the catalog (adopted); its record is dropped, then made again by name.
    await call('POST', '/v1/table/{id}/version/list', `/v1/table/${mvT}/version/list?descending=true`, 200, undefined, mv);
    await call(
      'POST',
      '/v1/table/{id}/version/delete',
      `/v1/table/${mvT}/version/delete`,
      200,
      { ranges: [{ start_version: 0, end_version: -1 }] },
      mv,
    );
    await call(
      'POST',
      '/v1/table/{id}/version/create',
      `/v1/table/${mvT}/version/create`,
      200,
      { version: 1, manifest_path: manifestOf(1) },
      mv,
    );
    await call(
      'POST',
      '/v1/table/{id}/version/create',
      `/v1/table/${mvT}/version/create`,
      409,
      { version: 1, manifest_path: manifestOf(1) },
      mv,
    );
    await call('POST', '/v1/table/{id}/version/create', `/v1/table/${orders}/version/create`, 406, { version: 9, manifest_path: 'x' });
    await call(
      'POST',
      '/v1/table/version/batch-create',
      '/v1/table/version/batch-create',
      409,
      { entries: [{ id: ['mv_t'], version: 1, manifest_path: manifestOf(1) }] },
      mv,
    );
    await call(
      'POST',
      '/v1/table/batch-commit',
      '/v1/table/batch-commit',
      200,
      {
        operations: [{ delete_table_versions: { id: ['mv_t'], ranges: [{ start_version: 1, end_version: -1 }] } }],
      },
      mv,
    );
    await call(
      'POST',
      '/v1/table/version/batch-create',
      '/v1/table/version/batch-create',
      200,
      { entries: [{ id: ['mv_t'], version: 1, manifest_path: manifestOf(1) }] },
      mv,
    );

    // Errors: the documented body.
    await call('POST', '/v1/namespace/{id}/describe', `/v1/namespace/${idPath('missing')}/describe`, 404, {});
    await call('POST', '/v1/namespace/{id}/create', `/v1/namespace/${ns}/create`, 409, {});
    await call('POST', '/v1/namespace/{id}/create', `/v1/namespace/${idPath('x')}/create`, 401, {}, { 'x-service-database': tenant.name });
    await call('POST', '/v1/namespace/{id}/create', `/v1/namespace/${idPath('x')}/create`, 403, {}, tenant.reader.headers);
    await call('POST', '/v1/namespace/{id}/drop', `/v1/namespace/${ns}/drop`, 409, { behavior: 'Restrict' });
    await call('POST', '/v1/namespace/{id}/drop', `/v1/namespace/${ns}/drop`, 200, { behavior: 'Cascade' });

    // Operator API.
    const op = operator(gw).headers;
    await call('POST', '/admin/v1/databases', '/admin/v1/databases', 201, { name: 'docs_db', properties: { plan: 'gold' } }, op);
    await call('GET', '/admin/v1/databases', '/admin/v1/databases?limit=1', 200, undefined, op);
    await call('GET', '/admin/v1/databases/{name}', '/admin/v1/databases/docs_db', 200, undefined, op);
    await call(
      'PATCH',
      '/admin/v1/databases/{name}',
      '/admin/v1/databases/docs_db',
      200,
      { rate_limit: { limit: 50, window_ms: 1000 } },
      op,
    );
    const key = await call(
      'POST',
      '/admin/v1/databases/{name}/api-keys',
      '/admin/v1/databases/docs_db/api-keys',
      201,
      { role: 'read', description: 'docs' },
      op,
    );
    await call('GET', '/admin/v1/databases/{name}/api-keys', '/admin/v1/databases/docs_db/api-keys', 200, undefined, op);
    await call(
      'PATCH',
      '/admin/v1/databases/{name}/api-keys/{id}',
      `/admin/v1/databases/docs_db/api-keys/${key.body.id}`,
      200,
      { name: 'docs', owner: 'docs team', rate_limit: { limit: 10, window_ms: 1000 } },
      op,
    );
    await call(
      'POST',
      '/admin/v1/databases/{name}/api-keys/{id}/rotate',
      `/admin/v1/databases/docs_db/api-keys/${key.body.id}/rotate`,
      201,
      { overlap_seconds: 60 },
      op,
    );
    await call('GET', '/admin/v1/databases/{name}/audit', `/admin/v1/databases/${tenant.name}/audit`, 200, undefined, op);
    await call('GET', '/admin/v1/databases/{name}/usage', `/admin/v1/databases/${tenant.name}/usage?granularity=hour`, 200, undefined, op);
    await call('GET', '/admin/v1/usage', '/admin/v1/usage?sort=requests&limit=2', 200, undefined, op);
    await call('GET', '/admin/v1/usage/top-storage', '/admin/v1/usage/top-storage?limit=3', 200, undefined, op);
    await call('GET', '/admin/v1/usage/history', '/admin/v1/usage/history?granularity=hour', 200, undefined, op);
    await call('GET', '/admin/v1/health', '/admin/v1/health', 200, undefined, op);
    // Event sinks (docs/events.md): a NATS sink that takes nothing (its type filter matches no event), so nothing is sent.
    const sink = { kind: 'nats', url: 'nats://127.0.0.1:4222', types: ['lance.none.*'] };
    await call('POST', '/admin/v1/event-sinks', '/admin/v1/event-sinks', 201, { name: 'docs_fleet', ...sink }, op);
    await call('GET', '/admin/v1/event-sinks', '/admin/v1/event-sinks', 200, undefined, op);
    const dbSink = await call(
      'POST',
      '/admin/v1/databases/{name}/event-sinks',
      `/admin/v1/databases/${tenant.name}/event-sinks`,
      201,
      { name: 'docs_sink', ...sink },
      op,
    );
    await call(
      'POST',
      '/admin/v1/event-sinks',
      '/admin/v1/event-sinks',
      400,
      { name: 'bad', kind: 'webhook', url: 'https://127.0.0.1/x' },
      op,
    );
    await call('GET', '/admin/v1/databases/{name}/event-sinks', `/admin/v1/databases/${tenant.name}/event-sinks`, 200, undefined, op);
    const sinkPath = `/admin/v1/event-sinks/${dbSink.body.id}`;
    await call('GET', '/admin/v1/event-sinks/{id}', sinkPath, 200, undefined, op);
    await call('PATCH', '/admin/v1/event-sinks/{id}', sinkPath, 200, { enabled: false }, op);
    await call('GET', '/admin/v1/event-sinks/{id}/dead-letters', `${sinkPath}/dead-letters`, 200, undefined, op);
    await call('POST', '/admin/v1/event-sinks/{id}/dead-letters/replay', `${sinkPath}/dead-letters/replay`, 200, {}, op);
    await call('POST', '/admin/v1/event-sinks/{id}/dead-letters/discard', `${sinkPath}/dead-letters/discard`, 200, {}, op);
    await call('DELETE', '/admin/v1/event-sinks/{id}', sinkPath, 204, undefined, op);
    await call('GET', '/admin/v1/event-sinks/{id}', sinkPath, 404, undefined, op);
    await call(
      'PATCH',
      '/admin/v1/databases/{name}',
      '/admin/v1/databases/docs_db',
      200,
      { quotas: { max_tables: 10, max_storage_bytes: null } },
      op,
    );
    await call(
      'PUT',
      '/admin/v1/databases/{name}/maintenance',
      '/admin/v1/databases/docs_db/maintenance',
      200,
      { cleanup_retention_seconds: 3600 },
      op,
    );
    await call('GET', '/admin/v1/databases/{name}/maintenance', '/admin/v1/databases/docs_db/maintenance', 200, undefined, op);
    await call(
      'DELETE',
      '/admin/v1/databases/{name}/api-keys/{id}',
      `/admin/v1/databases/docs_db/api-keys/${key.body.id}`,
      204,
      undefined,
      op,
    );
    await call('DELETE', '/admin/v1/databases/{name}', '/admin/v1/databases/docs_db', 204, undefined, op);
    await call('GET', '/admin/v1/databases/{name}', '/admin/v1/databases/docs_db', 404, undefined, op);

    // Soft-delete, undrop and protection (docs/soft-delete.md): the tenant's routes need an admin key.
    await call(
      'PATCH',
      '/admin/v1/databases/{name}',
      `/admin/v1/databases/${tenant.name}`,
      200,
      { drop_profile: 'soft', drop_retention_seconds: 3600, protected: false },
      op,
    );
    const adm = {
      'x-api-key': (await operator(gw).post(`/admin/v1/databases/${tenant.name}/api-keys`, { role: 'admin' })).body.api_key,
      'x-service-database': tenant.name,
    };
    const softT = idPath('soft_t');
    const declareAndDrop = async () => {
      assert.equal((await tenant.api.post(`/v1/table/${softT}/declare`, {})).status, 200);
      assert.equal((await tenant.api.post(`/v1/table/${softT}/drop`, {})).status, 200);
    };
    assert.equal((await tenant.api.post(`/v1/table/${softT}/declare`, {})).status, 200);
    await call('POST', '/v1/table/{id}/protection', `/v1/table/${softT}/protection`, 200, { protected: true }, adm);
    await call('POST', '/v1/table/{id}/drop', `/v1/table/${softT}/drop`, 409, {});
    await call('POST', '/v1/table/{id}/protection', `/v1/table/${softT}/protection`, 200, { protected: false }, adm);
    assert.equal((await tenant.api.post(`/v1/namespace/${idPath('docs_p')}/create`, {})).status, 200);
    await call('POST', '/v1/namespace/{id}/protection', `/v1/namespace/${idPath('docs_p')}/protection`, 200, { protected: true }, adm);
    await call('POST', '/v1/namespace/{id}/protection', `/v1/namespace/${idPath('docs_p')}/protection`, 200, { protected: false }, adm);
    assert.equal((await tenant.api.post(`/v1/table/${softT}/drop`, {})).status, 200);
    const dropped = await call('POST', '/v1/dropped_tables/list', '/v1/dropped_tables/list', 200, {}, adm);
    await call(
      'POST',
      '/v1/dropped_tables/{dropped_id}/undrop',
      `/v1/dropped_tables/${dropped.body.dropped_tables[0].id}/undrop`,
      200,
      {},
      adm,
    );
    assert.equal((await tenant.api.post(`/v1/table/${softT}/drop`, {})).status, 200);
    const opDropped = await call(
      'GET',
      '/admin/v1/databases/{name}/dropped-tables',
      `/admin/v1/databases/${tenant.name}/dropped-tables`,
      200,
      undefined,
      op,
    );
    const did = opDropped.body.dropped_tables[0].id;
    await call(
      'POST',
      '/admin/v1/databases/{name}/dropped-tables/{id}/undrop',
      `/admin/v1/databases/${tenant.name}/dropped-tables/${did}/undrop`,
      200,
      {},
      op,
    );
    assert.equal((await tenant.api.post(`/v1/table/${softT}/drop`, {})).status, 200);
    await call('POST', '/v1/dropped_tables/{dropped_id}/purge', `/v1/dropped_tables/${did}/purge`, 200, {}, adm);
    await call('POST', '/v1/dropped_tables/{dropped_id}/purge', `/v1/dropped_tables/${did}/purge`, 404, {}, adm);
    await declareAndDrop();
    const last = (await operator(gw).get(`/admin/v1/databases/${tenant.name}/dropped-tables`)).body.dropped_tables[0].id;
    await call(
      'POST',
      '/admin/v1/databases/{name}/dropped-tables/{id}/purge',
      `/admin/v1/databases/${tenant.name}/dropped-tables/${last}/purge`,
      200,
      {},
      op,
    );

    // Health, metrics and the documentation itself.
    await call('GET', '/healthz', '/healthz', 200, undefined, {});
    await call('GET', '/readyz', '/readyz', 200, undefined, {});
    if (doc.paths['/metrics']) await call('GET', '/metrics', '/metrics', 200, undefined, {});
    await call('GET', '/openapi.json', '/openapi.json', 200, undefined, {});
    await call('GET', '/docs', '/docs', 200, undefined, {});

    // Every documented operation was exercised.
    const all = operationsOf(doc).map((o) => `${o.method} ${o.path}`);
    assert.deepEqual(
      all.filter((r) => !checked.has(r)),
      [],
      'operations not exercised by this test',
    );
  });

  it('matches the Lance Namespace spec, but for the commented allow-list', () => {
    const ours = new Map(operationsOf(doc).map((o) => [`${o.method} ${shape(o.path)}`, o]));
    const differences: Difference[] = [];
    const specRoutes = new Set<string>();
    for (const s of operationsOf(spec)) {
      const key = `${s.method} ${shape(s.path)}`;
      specRoutes.add(key);
      const o = ours.get(key);
      if (!o) differences.push({ op: s.op.operationId, kind: 'not-served', name: '', detail: `${s.method} ${s.path} is not served` });
      else differences.push(...compareOperation(s, o));
    }
    for (const o of operationsOf(doc)) {
      if (o.path.startsWith('/v1/') && !specRoutes.has(`${o.method} ${shape(o.path)}`)) {
        differences.push({ op: String(o.op.operationId), kind: 'extra-route', name: `${o.method} ${o.path}`, detail: 'no spec operation' });
      }
    }
    const unexplained = differences.filter((d) => !ALLOWED_DIFFERENCES.some((a) => matches(a, d)));
    const stale = ALLOWED_DIFFERENCES.filter((a) => !differences.some((d) => matches(a, d)));
    const show = (d: Difference) => `  ${d.op} ${d.kind} ${d.name}: ${d.detail}`;
    assert.deepEqual(
      unexplained.map(show),
      [],
      `differences from the Lance spec missing from ALLOWED_DIFFERENCES:\n${unexplained.map(show).join('\n')}`,
    );
    assert.deepEqual(
      stale.map((a) => `${a.op} ${a.kind} ${a.name}`),
      [],
      'ALLOWED_DIFFERENCES entries that match no difference any more (remove them)',
    );
    for (const a of ALLOWED_DIFFERENCES) assert.ok(a.reason.length > 10, `${a.op} ${a.kind} ${a.name} has a reason`);
    // The spec operations we serve are a good part of it.
    const served = operationsOf(spec).filter((s) => ours.has(`${s.method} ${shape(s.path)}`));
    assert.ok(served.length >= 16, `${served.length} spec operations served`);
  });
});

describe(`OpenAPI document with BASE_PATH [${kind}]`, () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway(kind, { BASE_PATH: '/lance' });
  });
  after(() => gw?.close());

  it('prefixes the REST-contract routes only, and the prefixed paths are the routes served', async () => {
    const res = await new Api(gw.url).get('/openapi.json');
    assert.equal(res.status, 200);
    const paths = Object.keys(res.body.paths);
    assert.ok(paths.includes('/lance/v1/namespace/{id}/create'));
    assert.ok(paths.includes('/lance/v1/table'));
    assert.ok(!paths.some((p) => p.startsWith('/v1/')), 'no unprefixed REST routes');
    for (const p of ['/admin/v1/databases', '/healthz', '/readyz', '/openapi.json']) assert.ok(paths.includes(p), p);
    assert.equal(res.body.paths['/lance/v1/namespace/{id}/create'].post.operationId, 'CreateNamespace');
    const t = await newTenant(gw);
    const created = await t.api.post('/lance/v1/namespace/docs_ns/create', {});
    assert.equal(created.status, 200, created.text);
  });
});

/** A route without @Operation is still documented, after the spec when it is a spec operation. */
describe('OpenAPI document of routes not described yet', () => {
  @Controller('v1')
  class LaterController {
    @Post('table/:id/tags/list')
    tags() {
      return {};
    }
    @Get('table/:id/something_new')
    other() {
      return {};
    }
  }
  @Module({ controllers: [LaterController] })
  class LaterModule {}

  let app: NestFastifyApplication;
  before(async () => {
    app = await NestFactory.create<NestFastifyApplication>(LaterModule, new FastifyAdapter(), { logger: false });
  });
  after(() => app?.close());

  it('names spec operations after the spec and gives every new route parameters, credentials and error answers', () => {
    const doc: Json = buildOpenApiDocument(app, { basePath: '' } as AppConfig);
    const tags = doc.paths['/v1/table/{id}/tags/list'].post;
    assert.equal(tags.operationId, 'ListTableTags');
    assert.equal(tags.summary, 'List all tags for a table');
    const other = doc.paths['/v1/table/{id}/something_new'].get;
    assert.equal(other.operationId, 'LaterController_other');
    for (const op of [tags, other]) {
      const names = op.parameters.map((p: Json) => `${p.in}:${p.name}`);
      for (const n of ['path:id', 'query:delimiter', 'header:x-service-database', 'header:x-service-database-prefix'])
        assert.ok(names.includes(n), n);
      assert.deepEqual(op.security, [{ ApiKeyAuth: [] }, { BearerAuth: [] }]);
      assert.equal(deref(doc, op.responses['404']).content['application/json'].schema.$ref, '#/components/schemas/ErrorResponse');
    }
  });
});
