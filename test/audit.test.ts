import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { after, before, it } from 'node:test';
import {
  ADMIN_KEY,
  Api,
  eventually,
  forEachCatalog,
  idPath,
  newTenant,
  operator,
  Reply,
  startGateway,
  Tenant,
  TestGateway,
} from './helpers/gateway';
import { expectProblem } from './helpers/assertions';
import { writeTable } from './helpers/lance';

/** The audit trail (issue 3): who created, dropped or renamed what, and when, readable through the operator API. */

interface Expected {
  action: string;
  target: string;
  actor: string;
  requestId: string;
  details?: Record<string, unknown>;
}

forEachCatalog('audit trail', (kind) => {
  let gw: TestGateway;
  let op: Api;
  let t: Tenant;
  let other: Tenant;
  let writeKeyId: string;
  let issuedSecret: string;
  const run = randomBytes(4).toString('hex');
  const rid = (label: string) => `${label}-${run}`;
  const expected: Expected[] = [];
  const failedRequestIds: string[] = [];

  /** A successful write through the REST contract with the write key, tagged with a request id we choose. */
  async function ok(
    label: string,
    p: string,
    body: unknown,
    exp: Omit<Expected, 'requestId' | 'actor'> & { actor?: string },
    api: Api = t.api,
  ) {
    const requestId = rid(label);
    const r = await api.post(p, body, { 'x-request-id': requestId });
    assert.equal(r.status, 200, `${label}: ${r.text}`);
    assert.equal(r.headers.get('x-request-id'), requestId);
    expected.push({ actor: `key:${writeKeyId}`, ...exp, requestId });
    return r;
  }

  async function fail(label: string, status: number, send: (headers: Record<string, string>) => Promise<Reply>) {
    const requestId = rid(label);
    const r = await send({ 'x-request-id': requestId });
    assert.equal(r.status, status, `${label}: ${r.text}`);
    failedRequestIds.push(requestId);
  }

  /** The trail's records of changes (refused requests, recorded a second later in batches, left out). */
  async function allEvents(api: Api = op): Promise<any[]> {
    return (await trail(api)).filter((e) => e.action !== 'request.refused');
  }

  async function trail(api: Api = op): Promise<any[]> {
    const r = await api.get(`/admin/v1/databases/${t.name}/audit?limit=10000`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.page_token, undefined);
    return r.body.events;
  }

  before(async () => {
    gw = await startGateway(kind);
    op = operator(gw);
    t = await newTenant(gw);
    other = await newTenant(gw);
    writeKeyId = (await op.get(`/admin/v1/databases/${t.name}/api-keys`)).body.api_keys.find((k: any) => k.role === 'write').id;

    // The REST contract, with the write key.
    await ok('ns-create', `/v1/namespace/${idPath('ns')}/create`, {}, { action: 'namespace.create', target: 'ns' });
    await ok('ns-create-gone', `/v1/namespace/${idPath('gone')}/create`, {}, { action: 'namespace.create', target: 'gone' });
    await ok('ns-drop', `/v1/namespace/${idPath('gone')}/drop`, {}, { action: 'namespace.drop', target: 'gone' });
    await ok('declare', `/v1/table/${idPath('ns', 't')}/declare`, {}, { action: 'table.declare', target: 'ns$t' });
    await ok(
      'rename',
      `/v1/table/${idPath('ns', 't')}/rename`,
      { new_table_name: 't2' },
      {
        action: 'table.rename',
        target: 'ns$t',
        details: { new_table_name: 't2' },
      },
    );
    const declared = await ok(
      'declare-data',
      `/v1/table/${idPath('ns', 'data')}/declare`,
      {},
      { action: 'table.declare', target: 'ns$data' },
    );
    await writeTable(declared.body.location, [{ id: 1 }, { id: 2 }]);
    await ok('deregister', `/v1/table/${idPath('ns', 'data')}/deregister`, {}, { action: 'table.deregister', target: 'ns$data' });
    const rel = path.relative(path.join(gw.config.storageRoot, t.name), declared.body.location);
    await ok(
      'register',
      `/v1/table/${idPath('ns', 'reg')}/register`,
      { location: rel },
      {
        action: 'table.register',
        target: 'ns$reg',
        details: { location: rel },
      },
    );
    await ok('drop', `/v1/table/${idPath('ns', 't2')}/drop`, {}, { action: 'table.drop', target: 'ns$t2' });
    const team1 = t.api.with({ 'x-service-database-prefix': 'team1' });
    await ok('prefixed-ns', `/v1/namespace/${idPath('pns')}/create`, {}, { action: 'namespace.create', target: 'team1:pns' }, team1);
    await ok(
      'prefixed-declare',
      `/v1/table/${idPath('pns', 'pt')}/declare`,
      {},
      { action: 'table.declare', target: 'team1:pns$pt' },
      team1,
    );
    // A custom delimiter does not change how the target is written.
    await ok('delimiter', `/v1/table/${encodeURIComponent('ns.dt')}/declare?delimiter=.`, {}, { action: 'table.declare', target: 'ns$dt' });

    // The operator API.
    const issueId = rid('op-issue');
    const issued = await op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'read' }, { 'x-request-id': issueId });
    assert.equal(issued.status, 201);
    issuedSecret = issued.body.api_key;
    expected.push({
      action: 'api_key.issue',
      target: t.name,
      actor: 'operator',
      requestId: issueId,
      details: { key_id: issued.body.id, role: 'read' },
    });
    const revokeId = rid('op-revoke');
    assert.equal((await op.delete(`/admin/v1/databases/${t.name}/api-keys/${issued.body.id}`, { 'x-request-id': revokeId })).status, 204);
    expected.push({ action: 'api_key.revoke', target: issued.body.id, actor: 'operator', requestId: revokeId });

    // Failed operations: nothing may be recorded for them.
    await fail('f-exists', 409, (h) => t.api.post(`/v1/namespace/${idPath('ns')}/create`, {}, h));
    await fail('f-no-ns', 404, (h) => t.api.post(`/v1/table/${idPath('nope', 'x')}/declare`, {}, h));
    await fail('f-reader', 403, (h) => t.reader.post(`/v1/namespace/${idPath('by_reader')}/create`, {}, h));
    await fail('f-bad-name', 400, (h) => t.api.post(`/v1/namespace/${encodeURIComponent('bad name')}/create`, {}, h));
    await fail('f-drop-missing', 404, (h) => t.api.post(`/v1/table/${idPath('ns', 'missing')}/drop`, {}, h));
    await fail('f-rename-missing', 404, (h) => t.api.post(`/v1/table/${idPath('ns', 'missing')}/rename`, { new_table_name: 'x' }, h));
    await fail('f-restrict', 409, (h) => t.api.post(`/v1/namespace/${idPath('ns')}/drop`, {}, h));
    await fail('f-register-traversal', 400, (h) => t.api.post(`/v1/table/${idPath('ns', 'evil')}/register`, { location: '../x.lance' }, h));
    await fail('f-no-key', 401, (h) =>
      new Api(gw.url, { 'x-service-database': t.name }).post(`/v1/namespace/${idPath('anon')}/create`, {}, h),
    );
    await fail('f-revoke-missing', 404, (h) => op.delete(`/admin/v1/databases/${t.name}/api-keys/${issued.body.id}`, h));
    await fail('f-issue-bad-role', 400, (h) => op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'root' }, h));
    await fail('f-issue-past', 400, (h) =>
      op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'read', expires_at: '2001-01-01T00:00:00Z' }, h),
    );

    // Some activity in another database, which must not show up in t's trail.
    assert.equal((await other.api.post(`/v1/namespace/${idPath('elsewhere')}/create`, {}, { 'x-request-id': rid('other') })).status, 200);
  });
  after(() => gw.close());

  it('lists every action newest first, with actor, target, request id and details', async () => {
    const events = await allEvents();
    const ours = events.filter((e) => e.request_id?.endsWith(`-${run}`));
    const want = [...expected].reverse();
    assert.deepEqual(
      ours.map((e) => [e.action, e.target, e.actor, e.request_id]),
      want.map((e) => [e.action, e.target, e.actor, e.requestId]),
    );
    for (const [i, e] of want.entries()) {
      if (e.details) for (const [k, v] of Object.entries(e.details)) assert.deepEqual(ours[i].details[k], v, `${e.action}.${k}`);
      assert.match(ours[i].id, /^[0-9a-f-]{36}$/);
    }
    const rename = ours.find((e) => e.action === 'table.rename');
    assert.equal(rename.details.new_table_name, 't2');
    // Newest first, by time.
    const times = events.map((e) => Date.parse(e.created_at));
    assert.ok(times.every((x) => !Number.isNaN(x)));
    for (let i = 1; i < times.length; i++) assert.ok(times[i - 1] >= times[i], `event ${i} is older than event ${i - 1}`);
    // The database and its first keys (made by newTenant through the operator API) are the oldest events.
    assert.deepEqual(
      events.slice(-3).map((e) => [e.action, e.actor]),
      [
        ['api_key.issue', 'operator'],
        ['api_key.issue', 'operator'],
        ['database.create', 'operator'],
      ],
    );
    assert.equal(events.at(-1).target, t.name);
  });

  it('records nothing for failed operations; a refused one only as request.refused', async () => {
    const events = await allEvents();
    for (const id of failedRequestIds) assert.ok(!events.some((e) => e.request_id === id), `a failed request was recorded: ${id}`);
    assert.ok(!events.some((e) => ['by_reader', 'anon', 'ns$evil', 'ns$missing'].includes(e.target)));
    assert.equal(events.filter((e) => e.action === 'api_key.revoke').length, 1);
    // The read key's refused create is in the trail as a refusal (who, which object, why), not as a change.
    const refusal = await eventually(async () =>
      (await trail()).find((e) => e.action === 'request.refused' && e.target === 'namespace by_reader'),
    );
    assert.equal(refusal.actor.startsWith('key:'), true);
    assert.deepEqual([refusal.details.status, refusal.details.reason], [403, 'needs create']);
  });

  it("shows only the database's own events", async () => {
    const events = await allEvents();
    assert.ok(!events.some((e) => e.request_id === rid('other') || e.target === 'elsewhere'));
    const theirs = await op.get(`/admin/v1/databases/${other.name}/audit`);
    assert.equal(theirs.status, 200);
    assert.ok(theirs.body.events.some((e: any) => e.target === 'elsewhere' && e.request_id === rid('other')));
    assert.ok(!theirs.body.events.some((e: any) => e.request_id?.endsWith(`-${run}`) && e.request_id !== rid('other')));
  });

  it('paginates with limit and page_token, covering every event once', async () => {
    const all = (await trail()).map((e) => e.id);
    assert.ok(all.length >= expected.length + 3);
    for (const limit of [1, 2, 7]) {
      const seen: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const r = await op.get(
          `/admin/v1/databases/${t.name}/audit?limit=${limit}${token ? `&page_token=${encodeURIComponent(token)}` : ''}`,
        );
        assert.equal(r.status, 200, r.text);
        assert.ok(r.body.events.length <= limit);
        seen.push(...r.body.events.map((e: any) => e.id));
        token = r.body.page_token;
        assert.ok(++pages <= all.length + 1, 'pagination terminates');
      } while (token);
      assert.deepEqual(seen, all, `limit ${limit}`);
    }
    expectProblem(await op.get(`/admin/v1/databases/${t.name}/audit?page_token=garbage`), 400, 13);
    expectProblem(await op.get(`/admin/v1/databases/${t.name}/audit?limit=abc`), 400, 13);
    const tok = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8').toString('base64url');
    expectProblem(await op.get(`/admin/v1/databases/${t.name}/audit?page_token=${tok('just-a-string')}`), 400, 13);
    // A token from another list (the databases list's token is a name) is not an audit token either.
    expectProblem(await op.get(`/admin/v1/databases/${t.name}/audit?page_token=${tok(['a'])}`), 400, 13);
  });

  it('filters by action (exact or a prefix ending in .), actor and target, combined with AND, paging within the filter', async () => {
    const all = await trail();
    const q = async (query: string) => {
      const r = await op.get(`/admin/v1/databases/${t.name}/audit?limit=10000&${query}`);
      assert.equal(r.status, 200, `${query}: ${r.text}`);
      return r.body.events as any[];
    };
    // Refused requests are recorded a second later, in batches: left out so that a late one does not disturb the comparisons.
    const ids = (events: any[]) => events.filter((e) => e.action !== 'request.refused').map((e) => e.id);
    // Each filter alone: exactly the events of the full trail that match, in the same order.
    const declares = await q('action=table.declare');
    assert.deepEqual(ids(declares), ids(all.filter((e) => e.action === 'table.declare')));
    assert.equal(declares.length, 4);
    const tableActions = await q('action=table.');
    assert.deepEqual(ids(tableActions), ids(all.filter((e) => e.action.startsWith('table.'))));
    assert.ok(tableActions.length > declares.length);
    assert.deepEqual(await q('action=table'), [], 'without the dot, an action is exact');
    const byOperator = await q('actor=operator');
    assert.deepEqual(ids(byOperator), ids(all.filter((e) => e.actor === 'operator')));
    assert.ok(byOperator.length >= 2);
    const byKey = await q(`actor=${encodeURIComponent(`key:${writeKeyId}`)}`);
    assert.deepEqual(ids(byKey), ids(all.filter((e) => e.actor === `key:${writeKeyId}`)));
    const onT = await q(`target=${encodeURIComponent('ns$t')}`);
    assert.deepEqual(
      onT.map((e) => e.action),
      ['table.rename', 'table.declare'],
    );
    assert.deepEqual(
      (await q(`target=${encodeURIComponent('team1:pns$pt')}`)).map((e) => e.action),
      ['table.declare'],
    );
    // Combined (AND).
    const both = await q(`action=table.declare&target=${encodeURIComponent('ns$t')}`);
    assert.deepEqual(ids(both), ids(onT.filter((e) => e.action === 'table.declare')));
    assert.equal(both.length, 1);
    assert.deepEqual(await q(`action=table.declare&actor=operator`), []);
    assert.deepEqual(
      ids(await q(`action=api_key.&actor=operator&target=${encodeURIComponent(t.name)}`)),
      ids(all.filter((e) => e.action.startsWith('api_key.') && e.actor === 'operator' && e.target === t.name)),
    );
    // Another database's events never match.
    assert.deepEqual(await q(`target=elsewhere`), []);

    // Paging within a filter: one event per page, every matching one once, nothing else.
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const r = await op.get(
        `/admin/v1/databases/${t.name}/audit?action=table.&limit=2${token ? `&page_token=${encodeURIComponent(token)}` : ''}`,
      );
      assert.equal(r.status, 200, r.text);
      assert.ok(r.body.events.every((e: any) => e.action.startsWith('table.')));
      seen.push(...ids(r.body.events));
      token = r.body.page_token;
      assert.ok(++pages <= tableActions.length + 1, 'pagination terminates');
    } while (token);
    assert.deepEqual(seen, ids(tableActions));

    // A long target (a deep namespace of long names, near the 2,000-character cap on identifiers; actor and target are
    // indexed on their md5): found by its target.
    const deep: string[] = [];
    for (let i = 0; i < 7; i++) {
      deep.push(randomBytes(190).toString('base64url').replace(/-/g, '_'));
      const r = await t.api.post(`/v1/namespace/${idPath(...deep)}/create`, {}, { 'x-request-id': rid(`deep-${i}`) });
      assert.equal(r.status, 200, r.text);
    }
    const deepest = (await trail()).find((e) => e.request_id === rid('deep-6'));
    assert.ok(deepest.target.length > 1700, `${deepest.target.length}`);
    assert.deepEqual(
      (await q(`target=${encodeURIComponent(deepest.target)}`)).map((e) => e.request_id),
      [rid('deep-6')],
    );

    // Bad values: 400 with the usual problem body; an empty value is no filter.
    expectProblem(await op.get(`/admin/v1/databases/${t.name}/audit?action=Table.Create`), 400, 13, { msg: /action/ });
    expectProblem(await op.get(`/admin/v1/databases/${t.name}/audit?action=${encodeURIComponent('table.%')}`), 400, 13);
    expectProblem(await op.get(`/admin/v1/databases/${t.name}/audit?action=.table`), 400, 13);
    expectProblem(await op.get(`/admin/v1/databases/${t.name}/audit?actor=${'a'.repeat(4200)}`), 400, 13, { msg: /actor/ });
    expectProblem(await op.get(`/admin/v1/databases/${t.name}/audit?target=${encodeURIComponent('a\nb')}`), 400, 13, { msg: /target/ });
    assert.deepEqual(ids(await q('action=&actor=')), ids(await trail()));
  });

  // Regression: a token of the right shape but with a non-date or non-UUID part is 400 code 13, not a 500.
  it('a forged page token of the right shape is 400, not a server error', async () => {
    const tok = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8').toString('base64url');
    const statuses: number[] = [];
    for (const forged of [
      ['not-a-date', '00000000-0000-0000-0000-000000000000'],
      [new Date().toISOString(), 'not-a-uuid'],
    ]) {
      statuses.push((await op.get(`/admin/v1/databases/${t.name}/audit?page_token=${tok(forged)}`)).status);
    }
    assert.deepEqual(statuses, [400, 400]);
  });

  it('never contains an API key secret', async () => {
    const r = await op.get(`/admin/v1/databases/${t.name}/audit?limit=10000`);
    for (const secret of [t.writeKey, t.readKey, issuedSecret, ADMIN_KEY]) assert.ok(!r.text.includes(secret), 'a secret in the audit');
    assert.ok(!r.text.includes('lgw_'), 'nothing that looks like a key');
  });

  it('is readable by the operator and an admin key of the database; not by read or write keys', async () => {
    expectProblem(await new Api(gw.url, { 'x-api-key': t.readKey }).get(`/admin/v1/databases/${t.name}/audit`), 403, 15);
    expectProblem(await new Api(gw.url, { 'x-api-key': t.writeKey }).get(`/admin/v1/databases/${t.name}/audit`), 403, 15);
    expectProblem(await new Api(gw.url).get(`/admin/v1/databases/${t.name}/audit`), 401, 16);
    expectProblem(await op.get('/admin/v1/databases/no_such_db/audit'), 404, 0);
    const admin = await op.post(`/admin/v1/databases/${t.name}/api-keys`, { role: 'admin' });
    const viaAdmin = await new Api(gw.url, { 'x-api-key': admin.body.api_key }).get(`/admin/v1/databases/${t.name}/audit?limit=10000`);
    assert.equal(viaAdmin.status, 200, viaAdmin.text);
    // Same trail, plus the admin key's own issue (after it, at most the refusals of the read and write keys above).
    const latest = viaAdmin.body.events.find((e: any) => e.action !== 'request.refused');
    assert.equal(latest.action, 'api_key.issue');
    assert.equal(latest.details.key_id, admin.body.id);
    // Reading the audit is not itself an audited change.
    const changes = viaAdmin.body.events.filter((e: any) => e.action !== 'request.refused');
    assert.equal((await allEvents()).length, changes.length);
  });
});
