import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GUARDS_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import { Access, catalogNeedOf, operationOf, requiredRole } from '../src/platform/http/operation.decorator';
import { ROUTE_ACCESS } from '../src/platform/http/route-access';
import { ACCESS_GUARDS } from '../src/route-policy.module';
import { ADMIN_KEY, Api, CATALOG_KINDS, newTenant, operator, Reply, startGateway, Tenant, TestGateway } from './helpers/gateway';

/**
 * Who may call each route, as the OpenAPI document states it (`security`, `x-required-role`), against what guards
 * the route: the guards and least role on its handler, and what the gateway answers to a credential too weak for it.
 * Roles and guards are written once (@Operation); this keeps the document and the enforcement the same thing.
 */

type Json = Record<string, any>;

/** The access a document operation states, from its security requirements. */
function accessOf(op: Json): Access {
  const schemes = (op.security ?? [])
    .flatMap((s: Json) => Object.keys(s))
    .sort()
    .join(',');
  const byScheme: Record<string, Access> = {
    '': 'public',
    'ApiKeyAuth,BearerAuth': 'catalog',
    OperatorKeyAuth: 'operator',
    'ApiKeyAuth,BearerAuth,OperatorKeyAuth': 'database-admin',
    MetricsKeyAuth: 'metrics',
  };
  const access = byScheme[schemes];
  assert.ok(access, `${op.operationId}: unexpected security ${schemes}`);
  return access;
}

interface Route {
  method: string;
  path: string;
  op: Json;
  access: Access;
}

const kind = CATALOG_KINDS.includes('postgres') || CATALOG_KINDS.length === 0 ? 'postgres' : CATALOG_KINDS[0];
const ZERO_UUID = '00000000-0000-4000-8000-000000000000';
const METRICS_KEY = 'route-access-metrics-key-0123456789';

describe(`route access: the document against the guards [${kind}]`, () => {
  let gw: TestGateway;
  let tenant: Tenant;
  let adminKey: string;
  let routes: Route[];

  before(async () => {
    gw = await startGateway(kind, { METRICS_API_KEY: METRICS_KEY });
    tenant = await newTenant(gw);
    const issued = await operator(gw).post(`/admin/v1/databases/${tenant.name}/api-keys`, { role: 'admin' });
    assert.equal(issued.status, 201, issued.text);
    adminKey = issued.body.api_key;
    const doc = (await new Api(gw.url).get('/openapi.json')).body as Json;
    routes = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) routes.push({ method: method.toUpperCase(), path, op, access: accessOf(op) });
    }
    assert.ok(routes.length > 40, `${routes.length} routes documented`);
  });
  after(() => gw?.close());

  /** A URL for a documented path: made-up objects, and the test database where a route is about one database. */
  const urlOf = (r: Route) =>
    r.path
      .replace('{id}', r.path.startsWith('/admin/') ? ZERO_UUID : encodeURIComponent('probe_ns$probe_t'))
      .replace('{index_name}', 'probe_idx')
      .replace('{name}', r.access === 'database-admin' ? tenant.name : r.path.startsWith('/admin/') ? 'no_such_db_probe' : 'probe_table');

  const call = (r: Route, headers: Record<string, string>): Promise<Reply> => {
    const hasBody = r.method === 'POST' || r.method === 'PATCH' || r.method === 'PUT';
    return new Api(gw.url, headers).request(r.method, urlOf(r), hasBody ? {} : undefined);
  };
  const refused = (res: Reply) => res.status === 401 || res.status === 403;
  const show = (r: Route, res: Reply) => `${r.method} ${r.path} → ${res.status} ${res.text.slice(0, 200)}`;

  it('puts on each handler exactly the guards and least role its documented access names', () => {
    const byOperationId = new Map<string, { handler: object; controller: object }>();
    for (const module of gw.app.get(ModulesContainer).values()) {
      for (const { metatype } of module.controllers.values()) {
        const proto = (metatype as { prototype?: Record<string, unknown> } | null)?.prototype;
        if (!metatype || !proto) continue;
        for (const key of Object.getOwnPropertyNames(proto)) {
          const handler = proto[key];
          const doc = typeof handler === 'function' && key !== 'constructor' ? operationOf(handler) : undefined;
          if (doc) byOperationId.set(doc.operationId, { handler: handler as object, controller: metatype });
        }
      }
    }
    let checked = 0;
    for (const r of routes) {
      const found = byOperationId.get(r.op.operationId);
      if (r.op.tags?.includes('Documentation')) {
        assert.equal(found, undefined, 'the documentation routes are served by SwaggerModule, not a controller');
        continue;
      }
      assert.ok(found, `${r.method} ${r.path} (${r.op.operationId}) has @Operation on its handler`);
      const guards = [
        ...((Reflect.getMetadata(GUARDS_METADATA, found.controller) as { name: string }[] | undefined) ?? []),
        ...((Reflect.getMetadata(GUARDS_METADATA, found.handler) as { name: string }[] | undefined) ?? []),
      ];
      // Every guarded route carries the one route-access guard, which runs the guards of its access in order.
      assert.deepEqual(
        guards.map((g) => g.name),
        r.access === 'public' ? [] : ['RouteAccessGuard'],
        `${r.method} ${r.path}: the route-access guard, and no others`,
      );
      assert.equal(Reflect.getMetadata(ROUTE_ACCESS, found.handler), r.access);
      assert.ok(r.access === 'public' || ACCESS_GUARDS[r.access as Access].length > 0, `${r.access} is enforced by some guard`);
      if (r.access === 'catalog') {
        assert.equal(requiredRole(found.handler), r.op['x-required-role'], `${r.method} ${r.path}: least role`);
        const needs = catalogNeedOf(found.handler);
        assert.deepEqual(r.op['x-required-privilege'], { privilege: needs.privilege, on: needs.on }, `${r.method} ${r.path}: privilege`);
        // A route whose `{id}` the guard checks names the object it checks; one without `{id}` is checked otherwise.
        if (needs.on === 'table' || needs.on === 'namespace')
          assert.match(r.path, /\{(id|name)\}/, `${r.method} ${r.path}: object in the path`);
      } else {
        assert.equal(operationOf(found.handler)?.needs, undefined, `${r.method} ${r.path}: no catalog privilege outside the catalog`);
        assert.equal(r.op['x-required-role'], undefined);
      }
      checked++;
    }
    assert.equal(checked, byOperationId.size, 'every @Operation handler is a documented route');
  });

  it('catalog routes: 401 without a credential, 403 for a role below the documented one, served from that role up', async () => {
    const catalog = routes.filter((r) => r.access === 'catalog');
    assert.ok(catalog.some((r) => r.op['x-required-role'] === 'write') && catalog.some((r) => r.op['x-required-role'] === 'read'));
    for (const r of catalog) {
      const anonymous = await call(r, { 'x-service-database': tenant.name });
      assert.equal(anonymous.status, 401, show(r, anonymous));
      assert.equal(anonymous.body.code, 16);
      const asReader = await call(r, tenant.reader.headers);
      const asWriter = await call(r, tenant.api.headers);
      if (r.op['x-required-role'] === 'admin') {
        // The admin-only catalog routes (dropped tables, protection flags): read and write keys are refused.
        for (const refusedOne of [asReader, asWriter]) {
          assert.equal(refusedOne.status, 403, show(r, refusedOne));
          assert.equal(refusedOne.body.code, 15);
          assert.match(refusedOne.body.detail, /needs 'admin'/);
        }
        const asAdmin = await call(r, { 'x-api-key': adminKey, 'x-service-database': tenant.name });
        assert.ok(!refused(asAdmin), `an admin key passes: ${show(r, asAdmin)}`);
        continue;
      }
      assert.ok(!refused(asWriter), `a write key passes: ${show(r, asWriter)}`);
      if (r.op['x-required-role'] === 'write') {
        assert.equal(asReader.status, 403, show(r, asReader));
        assert.equal(asReader.body.code, 15);
        assert.match(asReader.body.detail, /needs 'write'/);
      } else {
        assert.equal(r.op['x-required-role'], 'read', `${r.method} ${r.path}`);
        assert.ok(!refused(asReader), `a read key passes: ${show(r, asReader)}`);
      }
    }
  });

  it('operator routes: only the operator key; database-admin routes: the operator or an admin credential of that database', async () => {
    const op = { 'x-api-key': ADMIN_KEY };
    const dbAdmin = { 'x-api-key': adminKey };
    const writer = { 'x-api-key': tenant.writeKey };
    let operatorRoutes = 0;
    let adminRoutes = 0;
    for (const r of routes.filter((x) => x.access === 'operator')) {
      operatorRoutes++;
      const res = await call(r, dbAdmin);
      assert.equal(res.status, 403, `a database admin is refused: ${show(r, res)}`);
      const ok = await call(r, op);
      assert.ok(!refused(ok), `the operator passes: ${show(r, ok)}`);
    }
    for (const r of routes.filter((x) => x.access === 'database-admin')) {
      adminRoutes++;
      const res = await call(r, writer);
      assert.equal(res.status, 403, `a write key is refused: ${show(r, res)}`);
      for (const headers of [dbAdmin, op]) {
        const ok = await call(r, headers);
        assert.ok(!refused(ok), `passes: ${show(r, ok)}`);
      }
    }
    assert.ok(operatorRoutes >= 5 && adminRoutes >= 4, `${operatorRoutes} operator and ${adminRoutes} database-admin routes`);
  });

  it('metrics routes: the metrics key (when set), as a bearer token or x-api-key', async () => {
    const metrics = routes.filter((r) => r.access === 'metrics');
    assert.deepEqual(
      metrics.map((r) => r.path),
      ['/metrics'],
    );
    for (const r of metrics) {
      const anonymous = await call(r, {});
      assert.equal(anonymous.status, 401, show(r, anonymous));
      assert.equal(anonymous.body.code, 16);
      assert.equal((await call(r, { 'x-api-key': tenant.writeKey })).status, 401, 'a database key is no metrics key');
      assert.equal((await call(r, { authorization: `Bearer ${METRICS_KEY}` })).status, 200);
      assert.equal((await call(r, { 'x-api-key': METRICS_KEY })).status, 200);
    }
  });

  it('public routes answer without a credential', async () => {
    const open = routes.filter((r) => r.access === 'public');
    assert.ok(open.some((r) => r.path === '/healthz'));
    for (const r of open) {
      const res = await call(r, {});
      assert.equal(res.status, 200, show(r, res));
    }
  });
});
