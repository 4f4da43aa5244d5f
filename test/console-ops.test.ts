import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import * as arrow from 'apache-arrow';
import * as lancedb from '@lancedb/lancedb';
import {
  ADMIN_KEY,
  CATALOG_KINDS,
  eventually,
  newTenant,
  operator,
  pgUrlFor,
  startGateway,
  type Tenant,
  type TestGateway,
} from './helpers/gateway';
import { ARROW_STREAM } from './helpers/arrow-craft';
import { describeInBrowser, XSS } from './helpers/browser';

/**
 * The console's operations pages (docs/console.md) in a real headless Chromium: a database's jobs (cancel), its audit
 * trail (filters), dropping a table from its page and restoring or purging it from the Dropped tables page, and a read
 * key offered none of it. The gateway runs no jobs (JOBS_POLL_INTERVAL_MS=0), so a submitted job stays queued until
 * the page cancels it. Runs against the first catalog of TEST_CATALOGS only, like test/console.test.ts.
 */
const kind = CATALOG_KINDS[0] ?? 'postgres';

function rowsStream(n: number): Buffer {
  const table = new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => i)),
    name: arrow.vectorFromArray(
      Array.from({ length: n }, (_, i) => `row ${i}`),
      new arrow.Utf8(),
    ),
  });
  return Buffer.from(arrow.tableToIPC(table, 'stream'));
}

async function createTable(t: Tenant, id: string, rows: number): Promise<void> {
  const r = await t.api.request('POST', `/v1/table/${encodeURIComponent(id)}/create`, rowsStream(rows), { 'content-type': ARROW_STREAM });
  assert.equal(r.status, 200, r.text);
}

/** A queued `backfill_column` job (nobody runs jobs on this gateway) on a new table with a computed column. */
async function queuedJob(gw: TestGateway, t: Tenant, table: string): Promise<string> {
  const db = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: gw.url });
  const created = await db.createTable(
    table,
    Array.from({ length: 5 }, (_, i) => ({ id: i, x: i * 1.5 })),
  );
  await created.addColumns({ computed: [{ name: 'y', valueSql: 'x * 2' }] });
  const r = await t.api.post(`/v1/table/${table}/backfill_column`, { column: 'y' });
  assert.equal(r.status, 202, r.text);
  return r.body.job_id as string;
}

/**
 * A job that fails when run (jobs.test.ts): a computed column over a non-nullable column of a table with a deleted
 * row cannot be refreshed (an engine limitation). Queued only: nobody runs jobs on the test's gateway.
 */
async function failingJob(gw: TestGateway, t: Tenant, table: string): Promise<string> {
  const db = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: gw.url });
  const schema = new arrow.Schema([new arrow.Field('id', new arrow.Int64(), false), new arrow.Field('x', new arrow.Float64(), true)]);
  const rows = Array.from({ length: 5 }, (_, i) => ({ id: BigInt(i), x: i * 1.5 }));
  const strict = await db.createTable(table, lancedb.makeArrowTable(rows, { schema }));
  await strict.delete('id = 3');
  await strict.addColumns({ computed: [{ name: 'y', valueSql: 'id * 2' }] });
  const r = await t.api.post(`/v1/table/${table}/backfill_column`, { column: 'y' });
  assert.equal(r.status, 202, r.text);
  return r.body.job_id as string;
}

describeInBrowser(`console operations in headless Chromium [${kind}]`, (b) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let jobId: string;
  let failedId: string | undefined;

  before(async () => {
    gw = await startGateway(kind, { JOBS_POLL_INTERVAL_MS: '0', MAINTENANCE_ENABLED: 'false' });
    tenant = await newTenant(gw);
    // Drops are soft (restorable) only under a soft delete profile; the server default is hard.
    const soft = await operator(gw).request('PATCH', `/admin/v1/databases/${tenant.name}`, {
      drop_profile: 'soft',
      drop_retention_seconds: 3600,
      properties: { [XSS]: 'tenant-chosen property name' },
    });
    assert.equal(soft.status, 200, soft.text);
    assert.equal(soft.body.drop_profile.profile, 'soft');
    await createTable(tenant, 'keep', 3);
    await createTable(tenant, 'gone', 2);
    if (gw.pgDatabase) {
      // A failed job: run by a second replica (sharing the catalog and storage) that runs jobs, then stopped.
      failedId = await failingJob(gw, tenant, 'strict');
      const worker = await startGateway(kind, {
        DATABASE_URL: pgUrlFor(gw.pgDatabase),
        STORAGE_ROOT: gw.config.storageRoot,
        JOBS_POLL_INTERVAL_MS: '100',
        MAINTENANCE_ENABLED: 'false',
      });
      try {
        await eventually(
          async () => (await tenant.api.post('/v1/jobs/describe', { job_id: failedId })).body.job_state === 'FAILED',
          300,
          100,
        );
      } finally {
        await worker.close();
      }
    }
    jobId = await queuedJob(gw, tenant, 'computed');
    b.url = gw.url;
    await b.launch();
  });
  after(async () => {
    await gw?.close();
  });

  it('the operator sees a queued job, its details, and cancels it on the page (confirmed); the API agrees', async () => {
    const { page, dialogs, errors } = await b.newPage();
    await b.signIn(page, ADMIN_KEY);
    await page.goto(`${gw.url}/console#/db/${tenant.name}/jobs`);
    const row = page.getByRole('table', { name: 'Jobs' }).getByRole('row').filter({ hasText: jobId });
    await row.waitFor();
    const text = (await row.textContent()) ?? '';
    assert.match(text, /backfill_column/);
    assert.match(text, /computed/);
    assert.match(text, /in progress/);
    // Queued: not started, not ended.
    assert.deepEqual(await row.locator('td:nth-child(6), td:nth-child(7)').allTextContents(), ['', '']);

    assert.ok(failedId || kind !== 'postgres', 'a failed job on Postgres');
    if (failedId) {
      // A failed job shows why in the list (the list's `failure`), and when it started and ended.
      const failed = page.getByRole('table', { name: 'Jobs' }).getByRole('row').filter({ hasText: failedId });
      await failed.filter({ hasText: 'compact the table' }).waitFor();
      assert.match((await failed.textContent()) ?? '', /failed/);
      const [started, ended] = await failed.locator('td:nth-child(6), td:nth-child(7)').allTextContents();
      assert.ok(started && ended, `started ${started}, ended ${ended}`);
      assert.equal(await failed.getByRole('button', { name: /Cancel job/ }).count(), 0, 'a failed job offers no cancel');
    }
    await row.getByRole('button', { name: `Details of job ${jobId}` }).click();
    const facts = page.getByLabel('Job details');
    await facts.getByText('"column":"y"', { exact: false }).waitFor();
    assert.match((await facts.textContent()) ?? '', /Attempts0/);

    await row.getByRole('button', { name: `Cancel job ${jobId}` }).click();
    // Nothing happens before the confirmation.
    assert.equal((await tenant.api.post('/v1/jobs/describe', { job_id: jobId })).body.job_state, 'IN_PROGRESS');
    await row.getByRole('button', { name: `Confirm cancel of job ${jobId}` }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Job ${jobId} is cancelled.` })
      .waitFor();
    await row.filter({ hasText: 'cancelled' }).waitFor();
    assert.equal(await row.getByRole('button', { name: /Cancel job/ }).count(), 0, 'a cancelled job offers no cancel');
    assert.equal((await tenant.api.post('/v1/jobs/describe', { job_id: jobId })).body.job_state, 'CANCELLED');
    await facts.getByText('cancelled', { exact: true }).waitFor();
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
  });

  it("the audit trail lists events; the filters are the route's (server-side); tenant strings in details are text", async () => {
    const { page, dialogs, errors } = await b.newPage();
    await b.signIn(page, ADMIN_KEY);
    await page.goto(`${gw.url}/console#/db/${tenant.name}/audit`);
    const events = page.getByRole('table', { name: 'Audit events' });
    await events.getByRole('cell', { name: 'table.create', exact: true }).first().waitFor();
    const all = await events.locator('tbody tr').count();
    const trail = async (query = '') => (await operator(gw).get(`/admin/v1/databases/${tenant.name}/audit?limit=50${query}`)).body.events;
    const api = await trail();
    assert.equal(all, api.length, 'one row per event of the page');
    await page.getByText(`${all} events on this page`).waitFor();
    const creates = await trail('&action=table.create');
    assert.ok(creates.length >= 2 && creates.length < all, `${creates.length} of ${all}`);

    // The database update recorded the XSS-looking property name; it shows as those characters.
    const update = events.getByRole('row').filter({ hasText: 'database.update' });
    assert.match((await update.textContent()) ?? '', /<img src=x onerror=alert\(1\)>/);
    assert.equal(await page.locator('img').count(), 0);

    // The filters are sent to the route (the requests say so) and answered from the whole trail.
    const asked: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/audit?')) asked.push(new URL(r.url()).search);
    });
    await page.getByLabel('Action').fill('table.create');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.getByText(`${creates.length} matching events on this page`).waitFor();
    assert.ok(
      asked.some((q) => new URLSearchParams(q).get('action') === 'table.create'),
      asked.join(' '),
    );
    assert.equal(await events.locator('tbody tr').count(), creates.length);
    for (const cell of await events.locator('tbody tr td:nth-child(3)').allTextContents()) assert.equal(cell, 'table.create');
    // Action and target together (AND): the creation of the table `gone` only.
    const gone = creates.filter((e: { target: string }) => e.target === 'gone');
    assert.equal(gone.length, 1, JSON.stringify(creates.map((e: { target: string }) => e.target)));
    await page.getByLabel('Target').fill('gone');
    await page.getByLabel('Target').press('Enter');
    await page.getByText('1 matching events on this page').waitFor();
    assert.equal(await events.locator('tbody tr td:nth-child(2)').first().textContent(), gone[0].actor);
    // A prefix of actions, by one actor.
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByText(`${all} events on this page`).waitFor();
    assert.equal(await page.getByLabel('Target').inputValue(), '');
    const byOperator = await trail('&actor=operator&action=database.');
    assert.ok(byOperator.length >= 1);
    await page.getByLabel('Actor').fill('operator');
    await page.getByLabel('Action').fill('database.');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.getByText(`${byOperator.length} matching events on this page`).waitFor();
    for (const cell of await events.locator('tbody tr td:nth-child(2)').allTextContents()) assert.equal(cell, 'operator');
    // A value the route refuses is shown as its error.
    await page.getByLabel('Action').fill('Not An Action');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /action/ })
      .waitFor();
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
  });

  it('a table dropped from its page (confirmed) is restored from the Dropped tables page with its rows; another is purged', async () => {
    const { page, dialogs, errors } = await b.newPage();
    await b.signIn(page, ADMIN_KEY);
    await page.goto(`${gw.url}/console#/db/${tenant.name}/table/keep`);
    await page.getByRole('heading', { name: 'Table keep' }).waitFor();
    await page.getByRole('button', { name: 'Drop table' }).click();
    // The operator is told what the database's delete profile does with it.
    await page.getByText('delete profile is soft: it can be restored from Dropped tables for 1 hour').waitFor();
    assert.equal((await tenant.api.post('/v1/table/keep/describe', {})).status, 200, 'not dropped before the confirmation');
    await page.getByRole('button', { name: 'Confirm drop of keep' }).click();
    await page.getByRole('heading', { name: 'Dropped tables' }).waitFor();
    assert.equal((await tenant.api.post('/v1/table/keep/describe', {})).status, 404);

    const dropped = page.getByRole('table', { name: 'Dropped tables' });
    const row = dropped.getByRole('row').filter({ has: page.getByRole('cell', { name: 'keep', exact: true }) });
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /operator/, 'dropped by the operator');
    await row.getByRole('button', { name: 'Restore keep' }).click();
    await row.getByRole('button', { name: 'Restore table' }).click();
    await page.getByRole('status').filter({ hasText: 'Restored keep as keep.' }).waitFor();
    await dropped.getByRole('cell', { name: 'keep', exact: true }).waitFor({ state: 'detached' });
    const described = await tenant.api.post('/v1/table/keep/describe', {});
    assert.equal(described.status, 200, described.text);
    const count = await tenant.api.post('/v1/table/keep/count_rows', {});
    assert.equal(count.status, 200, count.text);
    assert.equal(Number(count.body), 3);
    await page.getByRole('link', { name: 'Open keep' }).click();
    await page.getByRole('table', { name: 'Rows' }).getByRole('cell', { name: 'row 2', exact: true }).waitFor();

    // Another table, dropped through the API, purged from the page (confirmed): gone for good.
    assert.equal((await tenant.api.post('/v1/table/gone/drop', {})).status, 200);
    await page.getByRole('navigation', { name: 'Database' }).getByRole('link', { name: 'Dropped tables' }).click();
    const goneRow = dropped.getByRole('row').filter({ has: page.getByRole('cell', { name: 'gone', exact: true }) });
    await goneRow.getByRole('button', { name: 'Purge gone' }).click();
    const listed = await operator(gw).get(`/admin/v1/databases/${tenant.name}/dropped-tables`);
    assert.equal(listed.body.dropped_tables.length, 1, 'not purged before the confirmation');
    await goneRow.getByRole('button', { name: 'Confirm purge of gone' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Purged gone/ })
      .waitFor();
    await page.getByText('No dropped tables.').waitFor();
    assert.deepEqual((await operator(gw).get(`/admin/v1/databases/${tenant.name}/dropped-tables`)).body.dropped_tables, []);
    assert.equal((await tenant.api.post('/v1/table/gone/describe', {})).status, 404);
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
  });

  it('a read key is offered no cancel, drop, undrop or purge, and no audit or dropped tables tab', async () => {
    const queued = await queuedJob(gw, tenant, 'computed_too');
    await tenant.api.post('/v1/table/keep/drop', {}).then((r) => assert.equal(r.status, 200, r.text));
    await createTable(tenant, 'keep', 1);
    const { page, dialogs, errors } = await b.newPage();
    await b.signIn(page, tenant.readKey, tenant.name);
    const tabs = page.getByRole('navigation', { name: 'Database' });
    await tabs.getByText('read key').waitFor();
    assert.equal(await tabs.getByRole('link', { name: 'Audit trail' }).count(), 0);
    assert.equal(await tabs.getByRole('link', { name: 'Dropped tables' }).count(), 0);

    await tabs.getByRole('link', { name: 'Jobs' }).click();
    const row = page.getByRole('table', { name: 'Jobs' }).getByRole('row').filter({ hasText: queued });
    await row.filter({ hasText: 'in progress' }).waitFor();
    await row.getByRole('button', { name: `Details of job ${queued}` }).waitFor();
    assert.equal(await page.getByRole('button', { name: /Cancel/ }).count(), 0);

    await page.goto(`${gw.url}/console#/db/${tenant.name}/table/keep`);
    await page.getByRole('table', { name: 'Rows' }).getByRole('cell', { name: 'row 0', exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: /Drop/ }).count(), 0);

    // Asked for directly, the pages show the API's refusal and no button.
    await page.goto(`${gw.url}/console#/db/${tenant.name}/dropped`);
    await page.getByRole('alert').filter({ hasText: /^403/ }).waitFor();
    assert.equal(await page.getByRole('button', { name: /Restore|Purge/ }).count(), 0);
    await page.goto(`${gw.url}/console#/db/${tenant.name}/audit`);
    await page.getByRole('alert').filter({ hasText: /^403/ }).waitFor();
    assert.equal(await page.getByRole('table', { name: 'Audit events' }).count(), 0);
    assert.equal((await tenant.api.post('/v1/jobs/describe', { job_id: queued })).body.job_state, 'IN_PROGRESS');
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
  });
});
