import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { after, before, it } from 'node:test';
import type { Page } from 'playwright-core';
import { UsageMeter } from '../src/modules/metering/usage-meter.service';
import {
  ADMIN_KEY,
  Api,
  CATALOG_KINDS,
  eventually,
  newTenant,
  operator,
  startGateway,
  type Tenant,
  type TestGateway,
} from './helpers/gateway';
import { describeInBrowser } from './helpers/browser';

/**
 * The console's database pages for the operator (docs/console.md): editing settings, quotas and the rate limit, the
 * maintenance policy, usage charts and their CSV, and API keys (grants, expiry, edit, rotate), driven in a real
 * headless Chromium against a real gateway. First catalog of TEST_CATALOGS only (what it covers is the page).
 */
const kind = CATALOG_KINDS[0] ?? 'postgres';

describeInBrowser(`console database pages in headless Chromium [${kind}]`, (b) => {
  let gw: TestGateway;
  let tenant: Tenant;

  /** Signs in as the operator and opens a page of a database. */
  async function operatorOn(name: string, tab: string): Promise<{ page: Page; dialogs: string[]; errors: string[] }> {
    const p = await b.newPage({ acceptDownloads: true });
    await b.signIn(p.page, ADMIN_KEY);
    await p.page.goto(`${gw.url}/console#/db/${name}/${tab}`);
    return p;
  }

  before(async () => {
    // Usage is flushed by the test (UsageMeter.flush), not by the timer.
    gw = await startGateway(kind, { USAGE_FLUSH_INTERVAL_SECONDS: '3600', USAGE_REFRESH_INTERVAL_SECONDS: '0' });
    tenant = await newTenant(gw);
    b.url = gw.url;
    await b.launch();
  });
  after(async () => {
    await gw?.close();
  });

  it('edits quotas and the rate limit (the API shows them), shows the storage profile, and shows a 400 for a bad value', async () => {
    const { page, dialogs, errors } = await operatorOn(tenant.name, 'overview');
    const form = page.getByRole('form', { name: 'Edit settings' });
    await form.waitFor();
    await page.locator('dt', { hasText: /^Storage profile$/ }).waitFor();
    await form.getByLabel('Max tables').fill('3');
    await form.getByLabel('Rate limit (requests)').fill('5000');
    await form.getByLabel('per window (ms)').fill('60000');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.getByRole('status').filter({ hasText: 'Saved: quotas, rate_limit.' }).waitFor();
    const db = (await operator(gw).get(`/admin/v1/databases/${tenant.name}`)).body;
    assert.equal(db.quotas.max_tables, 3);
    assert.deepEqual(db.rate_limit, { limit: 5000, window_ms: 60000 });
    // The facts above the form follow.
    const maxTables = page.locator('.facts div').filter({ has: page.locator('dt', { hasText: /^Max tables$/ }) });
    assert.equal(await maxTables.locator('dd').textContent(), '3');

    // A bad value: the API refuses it, and the page shows its message; nothing changed.
    await form.getByLabel('Max tables').fill('-1');
    await form.getByRole('button', { name: 'Save settings' }).click();
    const alert = form.getByRole('alert');
    await alert.waitFor();
    assert.match((await alert.textContent()) ?? '', /^400 .*max_tables must be >= 0/);
    await form.getByLabel('Max tables').fill('many');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form
      .getByRole('alert')
      .filter({ hasText: /^400 .*max_tables/ })
      .waitFor();
    assert.equal((await operator(gw).get(`/admin/v1/databases/${tenant.name}`)).body.quotas.max_tables, 3);

    // Emptying the rate limit sends null: back to the server default.
    await form.getByLabel('Max tables').fill('3');
    await form.getByLabel('Rate limit (requests)').fill('');
    await form.getByLabel('per window (ms)').fill('');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.getByRole('status').filter({ hasText: 'Saved: rate_limit.' }).waitFor();
    assert.equal((await operator(gw).get(`/admin/v1/databases/${tenant.name}`)).body.rate_limit, null);
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
  });

  it('edits the maintenance policy (the API shows it) and shows its 400', async () => {
    const { page, errors } = await operatorOn(tenant.name, 'overview');
    const form = page.getByRole('form', { name: 'Maintenance policy' });
    await form.waitFor();
    await form.getByLabel('Automatic maintenance').selectOption('false');
    await form.getByLabel('Compact at fragments (at least 2)').fill('7');
    await form.getByRole('button', { name: 'Save maintenance policy' }).click();
    await form.getByRole('status').filter({ hasText: 'Maintenance policy saved.' }).waitFor();
    const m = (await operator(gw).get(`/admin/v1/databases/${tenant.name}/maintenance`)).body;
    assert.deepEqual(m.maintenance, { enabled: false, compact_min_fragments: 7 });

    await form.getByLabel('Compact at fragments (at least 2)').fill('1');
    await form.getByRole('button', { name: 'Save maintenance policy' }).click();
    await page.getByRole('alert').filter({ hasText: /^400 / }).waitFor();
    assert.deepEqual((await operator(gw).get(`/admin/v1/databases/${tenant.name}/maintenance`)).body.maintenance, {
      enabled: false,
      compact_min_fragments: 7,
    });
    assert.deepEqual(errors, []);
  });

  it("charts a database's requests (hourly and daily) and offers the API's CSV as a download", async () => {
    const t = await newTenant(gw);
    for (let i = 0; i < 7; i++) assert.equal((await t.reader.get('/v1/namespace/%24/list')).status, 200);
    await gw.app.get(UsageMeter).flush();
    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString();
    const api = (await operator(gw).get(`/admin/v1/databases/${t.name}/usage?granularity=hour&from=${hour}`)).body;
    const reads = api.periods.find((p: { start: string }) => Date.parse(p.start) === Date.parse(hour))?.read_requests as number;
    assert.ok(reads >= 7, JSON.stringify(api));

    const { page, dialogs, errors } = await operatorOn(t.name, 'overview');
    // Each chart's data is a table in a <details> under it: opened, as a reader would.
    await page.getByText('Data of Requests per hour').click();
    const hourly = page.getByRole('table', { name: 'Requests per hour data' });
    const row = hourly.getByRole('row').filter({ hasText: hour.slice(0, 16).replace('T', ' ') });
    await row.waitFor();
    const cells = await row.getByRole('cell').allTextContents();
    assert.equal(cells[1], String(reads), `reads of ${cells.join(' | ')}`);
    await page.getByRole('table', { name: 'Rows written per hour data', includeHidden: true }).waitFor({ state: 'attached' });

    await page.getByLabel('Granularity').selectOption('day');
    await page.getByText('Data of Requests per day').click();
    const daily = page.getByRole('table', { name: 'Requests per day data' });
    const today = daily.getByRole('row').filter({ hasText: hour.slice(0, 10) });
    await today.waitFor();
    assert.equal((await today.getByRole('cell').allTextContents())[1], String(reads));
    await page.getByRole('table', { name: 'Storage per day data', includeHidden: true }).waitFor({ state: 'attached' });

    // The CSV: fetched with the session's headers, offered as a blob: link (allowed by the page's CSP).
    await page.getByRole('button', { name: 'Prepare CSV' }).click();
    const link = page.getByRole('link', { name: 'Download the CSV (daily)' });
    assert.match((await link.getAttribute('href')) ?? '', /^blob:/);
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    assert.equal(download.suggestedFilename(), `usage-${t.name}-day.csv`);
    const file = await download.path();
    const csv = fs.readFileSync(file, 'utf8');
    const from = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);
    const expected = await operator(gw).get(`/admin/v1/databases/${t.name}/usage?granularity=day&from=${from}`, { accept: 'text/csv' });
    assert.match(expected.headers.get('content-type') ?? '', /text\/csv/);
    assert.equal(csv, expected.text);
    assert.match(csv, new RegExp(`${hour.slice(0, 10)}.*,${reads},`));
    assert.ok(!page.url().includes(ADMIN_KEY));
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
  });

  it('charts requests refused by the rate limit as throttled', async () => {
    const t = await newTenant(gw);
    const limited = await operator(gw).request('PATCH', `/admin/v1/databases/${t.name}`, { rate_limit: { limit: 2, window_ms: 60000 } });
    assert.equal(limited.status, 200, limited.text);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await t.reader.get('/v1/namespace/%24/list')).status);
    assert.deepEqual(statuses, [200, 200, 503]);
    await gw.app.get(UsageMeter).flush();
    const { page, errors } = await operatorOn(t.name, 'overview');
    await page.getByLabel('Granularity').selectOption('day');
    await page.getByText('Data of Requests per day').click();
    const table = page.getByRole('table', { name: 'Requests per day data' });
    await table.getByRole('columnheader').first().waitFor();
    assert.deepEqual(await table.getByRole('columnheader').allTextContents(), ['Day (UTC)', 'Reads', 'Writes', 'Throttled', 'Failed']);
    const today = table.getByRole('row').filter({ hasText: new Date().toISOString().slice(0, 10) });
    await today.waitFor();
    assert.deepEqual((await today.getByRole('cell').allTextContents()).slice(1), ['3', '0', '1', '0']);
    assert.deepEqual(errors, []);
  });

  it('creates a key with grants and an expiry, edits it, and rotates it (a new secret once; the old one ends)', async () => {
    const { page, dialogs, errors } = await operatorOn(tenant.name, 'keys');
    const create = page.getByRole('form', { name: 'Create an API key' });
    await create.waitFor();
    // Grants the API refuses: its message.
    await create.getByLabel('Role').selectOption('read');
    await create.getByLabel('Grants (JSON; empty: all of the database)').fill('[{"privileges": ["insert"], "on": {"database": true}}]');
    await create.getByRole('button', { name: 'Create key' }).click();
    await create
      .getByRole('alert')
      .filter({ hasText: /^400 .*cannot be granted 'insert'/ })
      .waitFor();

    await create.getByLabel('Key name (optional)').fill('scoped');
    await create.getByLabel('Expires at (UTC; empty: never)').fill('2030-01-02T03:04');
    await create
      .getByLabel('Grants (JSON; empty: all of the database)')
      .fill('[{"privileges": ["describe", "select"], "on": {"namespace": ["ns1"]}}]');
    await create.getByRole('button', { name: 'Create key' }).click();
    const first = await page.getByLabel('Secret').inputValue();
    assert.match(first, /^lgw_/);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    const keys = page.getByRole('table', { name: 'API keys' });
    const row = keys.getByRole('row').filter({ hasText: 'scoped' });
    await row.waitFor();
    const text = (await row.textContent()) ?? '';
    assert.match(text, /describe, select on namespace ns1/);
    assert.match(text, /2030-01-02 03:04:00Z/);
    const listed = (await operator(gw).get(`/admin/v1/databases/${tenant.name}/api-keys`)).body.api_keys.find(
      (k: { name: string | null }) => k.name === 'scoped',
    );
    assert.equal(listed.expires_at, '2030-01-02T03:04:00.000Z');
    assert.deepEqual(listed.grants, [{ privileges: ['describe', 'select'], on: { namespace: ['ns1'] } }]);
    const oldKey = new Api(gw.url, { 'x-api-key': first, 'x-service-database': tenant.name });
    assert.equal((await oldKey.get('/v1/namespace/%24/list')).status, 200);

    // Edit: the name and the key's own rate limit (only those are sent).
    await row.getByRole('button', { name: `Edit key ${listed.id}` }).click();
    const edit = page.getByRole('form', { name: `Edit key ${listed.id}` });
    await edit.getByLabel('Name').fill('scoped-renamed');
    await edit.getByLabel("Key rate limit (requests; empty: the database's)").fill('100');
    await edit.getByLabel('per window (ms)').fill('1000');
    await edit.getByRole('button', { name: 'Save key' }).click();
    const renamed = keys.getByRole('row').filter({ hasText: 'scoped-renamed' });
    await renamed.filter({ hasText: '100 per 1000 ms' }).waitFor();
    const after = (await operator(gw).get(`/admin/v1/databases/${tenant.name}/api-keys`)).body.api_keys.find(
      (k: { id: string }) => k.id === listed.id,
    );
    assert.equal(after.name, 'scoped-renamed');
    assert.deepEqual(after.rate_limit, { limit: 100, window_ms: 1000 });
    assert.equal(after.expires_at, '2030-01-02T03:04:00.000Z', 'the expiry was not sent, so it is unchanged');

    // Rotate with no overlap: a new secret shown once; the old key expires at once.
    await renamed.getByRole('button', { name: `Rotate key ${listed.id}` }).click();
    const confirm = page.getByRole('form', { name: `Rotate key ${listed.id}` });
    await confirm.getByLabel('Old key valid for (seconds; empty: until revoked)').fill('0');
    await confirm.getByRole('button', { name: `Confirm rotate ${listed.id}` }).click();
    const second = await page.getByLabel('Secret').inputValue();
    assert.match(second, /^lgw_/);
    assert.notEqual(second, first);
    await page
      .getByRole('status')
      .filter({ hasText: `Key ${listed.id} rotated` })
      .waitFor();
    const newKey = new Api(gw.url, { 'x-api-key': second, 'x-service-database': tenant.name });
    assert.equal((await newKey.get('/v1/namespace/%24/list')).status, 200);
    await eventually(async () => (await oldKey.get('/v1/namespace/%24/list')).status === 401);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    assert.ok(!(await page.content()).includes(second));
    // The new key keeps the grants and says what it replaced; the old one shows as expired.
    const rotated = keys.getByRole('row').filter({ hasText: `replaces ${listed.id}` });
    await rotated.filter({ hasText: 'describe, select on namespace ns1' }).waitFor();
    await keys.getByRole('row').filter({ hasText: listed.id }).filter({ hasText: 'expired' }).first().waitFor();
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
  });
});
