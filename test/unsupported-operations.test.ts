import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { expectProblem } from './helpers/assertions';
import { Api, forEachCatalog, idPath, newTenant, startGateway, Tenant, TestGateway } from './helpers/gateway';

/**
 * Spec operations the engine cannot perform (issue 13): served, answering 406 with code 0 and a sentence saying why,
 * never a 404 "route not found"; the caller's credential is still checked first.
 */
forEachCatalog('operations the engine cannot do', (kind) => {
  let gw: TestGateway;
  let tenant: Tenant;

  before(async () => {
    // Cascade drops answer a transaction id at once, so that AlterTransaction has one to refuse.
    gw = await startGateway(kind, { CASCADE_SYNC_BUDGET_MS: '0' });
    tenant = await newTenant(gw);
  });
  after(() => gw?.close());

  it('CreateMaterializedView and RefreshMaterializedView: 406 code 0 saying materialized views are not supported', async () => {
    const body = { kind: 'query', source_query: { table: ['t'] }, output_schema: { fields: [] } };
    for (const op of ['create', 'refresh']) {
      for (const p of [`/v1/materialized_view/${idPath('mv')}/${op}`, `/v1/materialized_view/${idPath('ns', 'mv')}/${op}/`]) {
        const r = await tenant.api.post(p, op === 'create' ? body : {});
        expectProblem(r, 406, 0, { msg: /materialized view.*no materialized views/ });
      }
    }
    // Credentials first: a reader may not, an unknown caller is 401.
    expectProblem(await tenant.reader.post(`/v1/materialized_view/${idPath('mv')}/create`, body), 403, 15);
    expectProblem(
      await new Api(gw.url, { 'x-service-database': tenant.name }).post(`/v1/materialized_view/${idPath('mv')}/refresh`, {}),
      401,
      16,
    );
  });

  it("AlterTransaction: 406 code 0 for a transaction of the database, 404 code 10 for an unknown one or another database's", async () => {
    const api = tenant.api;
    assert.equal((await api.post(`/v1/namespace/${idPath('big')}/create`, {})).status, 200);
    assert.equal((await api.post(`/v1/table/${idPath('big', 't')}/declare`, {})).status, 200);
    const dropped = await api.post(`/v1/namespace/${idPath('big')}/drop`, { behavior: 'Cascade' });
    assert.equal(dropped.status, 200, dropped.text);
    const txid: string = dropped.body.transaction_id[0];
    const r = await api.post(`/v1/transaction/${encodeURIComponent(txid)}/alter`, {
      actions: [{ type: 'SetStatusAction', status: 'Failed' }],
    });
    expectProblem(r, 406, 0, { msg: /cannot be altered.*already committed/ });
    // Nothing changed: the clean-up still reports its own progress.
    const d = await api.post(`/v1/transaction/${encodeURIComponent(txid)}/describe`, {});
    assert.equal(d.status, 200, d.text);
    assert.ok(['Queued', 'Running', 'Succeeded'].includes(d.body.status), d.text);

    expectProblem(await api.post('/v1/transaction/00000000-0000-4000-8000-000000000000/alter', {}), 404, 10);
    expectProblem(await api.post('/v1/transaction/not-a-uuid/alter', {}), 404, 10);
    const other = await newTenant(gw);
    expectProblem(await other.api.post(`/v1/transaction/${encodeURIComponent(txid)}/alter`, {}), 404, 10);
    expectProblem(await tenant.reader.post(`/v1/transaction/${encodeURIComponent(txid)}/alter`, {}), 403, 15);
  });
});
