import assert from 'node:assert/strict';
import { before, after, it } from 'node:test';
import * as arrow from 'apache-arrow';
import * as lancedb from '@lancedb/lancedb';
import { ADMIN_KEY, Api, CATALOG_KINDS, operator, startGateway, type TestGateway } from './helpers/gateway';
import { ARROW_STREAM } from './helpers/arrow-craft';
import { assertClean, describeInBrowser } from './helpers/browser';
import { UsageMeter } from '../src/modules/metering/usage-meter.service';

/**
 * The operator's whole trip through the console (issue 35's proof), in one browser tab: sign in, create a database
 * and a key, set a quota, see the requests a tenant app just made on a chart, page through 1,000 tables, open one,
 * preview its rows, run a vector search, cancel a job, drop a table and restore it. With CONSOLE_SCREENSHOTS set
 * (`npm run console:screenshots`) it also takes the README's screenshots.
 */
const kind = CATALOG_KINDS[0] ?? 'postgres';
const DB = 'acme_flow';
const MANY = 1000;
const tableName = (i: number) => `t${String(i).padStart(4, '0')}`;
const vectorOf = (id: number) => Array.from({ length: 8 }, (_, j) => Math.cos(id * 1.3 + j) * id);

function itemsStream(ids: number[]): Buffer {
  const table = new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from(ids)),
    label: arrow.vectorFromArray(
      ids.map((i) => `item ${i}`),
      new arrow.Utf8(),
    ),
    vector: arrow.vectorFromArray(ids.map(vectorOf), new arrow.FixedSizeList(8, new arrow.Field('item', new arrow.Float32(), true))),
  });
  return Buffer.from(arrow.tableToIPC(table, 'stream'));
}

describeInBrowser(`the operator's trip through the console [${kind}]`, (b) => {
  let gw: TestGateway;
  before(async () => {
    // Nobody runs jobs here (a submitted job stays queued, to be cancelled); usage is flushed by the test.
    gw = await startGateway(kind, {
      JOBS_POLL_INTERVAL_MS: '0',
      MAINTENANCE_ENABLED: 'false',
      USAGE_FLUSH_INTERVAL_SECONDS: '3600',
      USAGE_REFRESH_INTERVAL_SECONDS: '0',
    });
    b.url = gw.url;
    await b.launch();
  });
  after(async () => gw?.close());

  it('signs in, creates a database and a key, sets a quota, charts usage, pages 1,000 tables, queries one, cancels a job, drops and restores a table', async () => {
    const tab = await b.newPage();
    const { page } = tab;
    const go = (path: string) => page.goto(`${gw.url}/console#/db/${DB}/${path}`);

    // 1. The operator signs in and creates a database.
    await b.signIn(page, ADMIN_KEY);
    await page.getByRole('table', { name: 'Health' }).waitFor();
    await page.getByLabel('New database name').fill(DB);
    await page.getByRole('button', { name: 'Create database' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Created database ${DB}.` })
      .waitFor();

    // 2. A quota, set on the page; the API has it.
    await go('overview');
    const settings = page.getByRole('form', { name: 'Edit settings' });
    await settings.getByLabel('Max tables').fill('5000');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings
      .getByRole('status')
      .filter({ hasText: /^Saved: quotas/ })
      .waitFor();
    assert.equal((await operator(gw).get(`/admin/v1/databases/${DB}`)).body.quotas.max_tables, 5000);
    // Drops are restorable under a soft delete profile (the server default is hard).
    const soft = await operator(gw).request('PATCH', `/admin/v1/databases/${DB}`, { drop_profile: 'soft', drop_retention_seconds: 3600 });
    assert.equal(soft.status, 200, soft.text);

    // 3. A write key, its secret shown once.
    await page.getByRole('navigation', { name: 'Database' }).getByRole('link', { name: 'API keys' }).click();
    const create = page.getByRole('form', { name: 'Create an API key' });
    await create.getByLabel('Role').selectOption('write');
    await create.getByLabel('Key name (optional)').fill('tenant-app');
    await create.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByLabel('Secret').inputValue();
    await b.screenshot(page, 'keys', page.getByRole('heading', { name: 'API keys', exact: true }));
    await page.getByRole('button', { name: 'I have copied it' }).click();

    // 4. The tenant's app uses it: 1,000 tables, a table of vectors, a long job (queued: nobody runs jobs here).
    const app = new Api(gw.url, { 'x-api-key': secret, 'x-service-database': DB });
    assert.equal((await app.post('/v1/namespace/many/create', {})).status, 200);
    for (let i = 0; i < MANY; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, MANY - i) }, async (_, j) => {
          const r = await app.post(`/v1/table/many%24${tableName(i + j)}/declare`, {});
          assert.equal(r.status, 200, r.text);
        }),
      );
    }
    const made = await app.request('POST', '/v1/table/items/create', itemsStream([1, 2, 3, 4, 5, 6]), { 'content-type': ARROW_STREAM });
    assert.equal(made.status, 200, made.text);
    const client = await lancedb.connect(`db://${DB}`, { apiKey: secret, hostOverride: gw.url });
    const computed = await client.createTable(
      'scores',
      Array.from({ length: 5 }, (_, i) => ({ id: i, x: i * 1.5 })),
    );
    await computed.addColumns({ computed: [{ name: 'y', valueSql: 'x * 2' }] });
    const job = await app.post('/v1/table/scores/backfill_column', { column: 'y' });
    assert.equal(job.status, 202, job.text);
    const jobId = job.body.job_id as string;

    // 5. The usage chart shows those requests (once the replica has flushed its counters).
    await gw.app.get(UsageMeter).flush();
    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString();
    const usage = (await operator(gw).get(`/admin/v1/databases/${DB}/usage?granularity=hour&from=${hour}`)).body;
    const writes = usage.periods.find((p: { start: string }) => Date.parse(p.start) === Date.parse(hour))?.write_requests as number;
    assert.ok(writes >= MANY, JSON.stringify(usage));
    await go('overview');
    await page.getByRole('img', { name: /^Chart: Requests per hour/ }).waitFor();
    await b.screenshot(page, 'database', page.getByRole('heading', { name: 'Usage', exact: true }));
    await page.getByText('Data of Requests per hour').click();
    const hourly = page.getByRole('table', { name: 'Requests per hour data' });
    const now = hourly.getByRole('row').filter({ hasText: hour.slice(0, 16).replace('T', ' ') });
    await now.waitFor();
    assert.ok(
      (await now.getByRole('cell').allTextContents()).includes(writes.toLocaleString('en-US')),
      'the chart has the writes just made',
    );
    await b.screenshot(page, 'database');

    // 6. 1,000 tables, paged on the server.
    await go('tables');
    await page.getByRole('tree', { name: 'Namespace tree' }).getByRole('button', { name: 'many', exact: true }).click();
    const list = page.getByRole('list', { name: 'Tables' });
    await list.getByRole('link', { name: tableName(0), exact: true }).waitFor();
    for (let p = 1; p < MANY / 50; p++) {
      await page.getByRole('button', { name: 'Next tables' }).click();
      await list.getByRole('link', { name: tableName(p * 50), exact: true }).waitFor();
    }
    assert.equal(await list.getByRole('link').count(), 50);
    assert.ok(await page.getByRole('button', { name: 'Next tables' }).isDisabled(), 'the last page');
    await list.getByRole('link', { name: tableName(MANY - 1), exact: true }).waitFor();
    await page.getByLabel('Table name prefix').fill('t050');
    await page.getByRole('button', { name: 'Search tables' }).click();
    await list.getByRole('link', { name: 't0509', exact: true }).waitFor();
    assert.equal(await list.getByRole('link').count(), 10);
    await b.screenshot(page, 'tables');

    // 7. A table: its rows, and a vector search from a row's vector (that row first).
    await go('table/items');
    const rows = page.getByRole('table', { name: 'Rows' });
    await rows.getByRole('cell', { name: 'item 4', exact: true }).waitFor();
    await rows
      .getByRole('row')
      .filter({ has: page.getByRole('cell', { name: 'item 4', exact: true }) })
      .getByRole('button', { name: /^Use the vector of row/ })
      .click();
    await page.getByLabel('Rows (k)').fill('3');
    await page.getByRole('button', { name: 'Run query' }).click();
    const results = page.getByRole('table', { name: 'Query results' });
    await page
      .getByRole('status')
      .filter({ hasText: /rows? found in \d+ ms$/ })
      .waitFor();
    const ids = (await results.locator('tbody tr').locator('td:first-child').allTextContents()).map(Number);
    assert.deepEqual(ids.length, 3);
    assert.equal(ids[0], 4, `nearest first: ${ids.join(', ')}`);
    await b.screenshot(page, 'table', page.getByRole('heading', { name: 'Query', exact: true }));

    // 8. The queued job, cancelled (confirmed on the page); the API agrees.
    await go('jobs');
    const jobRow = page.getByRole('table', { name: 'Jobs' }).getByRole('row').filter({ hasText: jobId });
    await jobRow.getByRole('button', { name: `Cancel job ${jobId}` }).click();
    await jobRow.getByRole('button', { name: `Confirm cancel of job ${jobId}` }).click();
    await jobRow.filter({ hasText: 'cancelled' }).waitFor();
    assert.equal((await app.post('/v1/jobs/describe', { job_id: jobId })).body.job_state, 'CANCELLED');
    await b.screenshot(page, 'jobs');

    // 9. A table dropped from its page, then restored from Dropped tables with its rows.
    await go('table/items');
    await page.getByRole('button', { name: 'Drop table' }).click();
    await page.getByRole('button', { name: 'Confirm drop of items' }).click();
    await page.getByRole('heading', { name: 'Dropped tables' }).waitFor();
    assert.equal((await app.post('/v1/table/items/describe', {})).status, 404);
    const dropped = page.getByRole('table', { name: 'Dropped tables' });
    const row = dropped.getByRole('row').filter({ has: page.getByRole('cell', { name: 'items', exact: true }) });
    await row.waitFor();
    await b.screenshot(page, 'dropped');
    await row.getByRole('button', { name: 'Restore items' }).click();
    await row.getByRole('button', { name: 'Restore table' }).click();
    await page.getByRole('status').filter({ hasText: 'Restored items as items.' }).waitFor();
    assert.equal(Number((await app.post('/v1/table/items/count_rows', {})).body), 6);

    // 10. The fleet, with the new database among the busiest.
    await page.getByRole('link', { name: 'Fleet' }).click();
    await page.getByRole('list', { name: 'Top databases by requests today' }).getByRole('link', { name: DB }).waitFor();
    await b.screenshot(page, 'fleet');
    assertClean(tab);
  });
});
