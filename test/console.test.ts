import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as arrow from 'apache-arrow';
import type { BrowserContext } from 'playwright-core';
import { ADMIN_KEY, Api, CATALOG_KINDS, newTenant, operator, startGateway, type Tenant, type TestGateway } from './helpers/gateway';
import { ARROW_STREAM } from './helpers/arrow-craft';
import { a11yViolations, assertClean, describeInBrowser, XSS } from './helpers/browser';

/**
 * The web console (docs/console.md) driven in a real headless Chromium (Debian's `chromium`; CHROMIUM_PATH to use
 * another binary): sign-in, the operator's fleet and database pages, a database key's tables, and tenant strings
 * shown as text. Runs against the first catalog of TEST_CATALOGS only: what it covers is the page, not the catalog.
 * Skipped, saying so, only when no Chromium binary exists (.ci/run installs one).
 */
const kind = CATALOG_KINDS[0] ?? 'postgres';

/** A table of one row whose `name` is `name`, as an Arrow IPC stream. */
function rowsStream(name: string): Buffer {
  const table = new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from([1, 2])),
    name: arrow.vectorFromArray([name, 'plain'], new arrow.Utf8()),
    vector: arrow.vectorFromArray(
      [Array.from({ length: 16 }, (_, i) => i / 16), Array.from({ length: 16 }, () => 0.5)],
      new arrow.FixedSizeList(16, new arrow.Field('item', new arrow.Float32(), true)),
    ),
  });
  return Buffer.from(arrow.tableToIPC(table, 'stream'));
}

async function createTable(t: Tenant, id: string, body: Buffer): Promise<void> {
  const r = await t.api.request('POST', `/v1/table/${encodeURIComponent(id)}/create`, body, { 'content-type': ARROW_STREAM });
  assert.equal(r.status, 200, r.text);
}

describe(`console switch [${kind}]`, () => {
  it('CONSOLE_ENABLED=false: no console', async () => {
    const gw = await startGateway(kind, { CONSOLE_ENABLED: 'false' });
    try {
      assert.equal((await fetch(`${gw.url}/console`)).status, 404);
      assert.equal((await fetch(`${gw.url}/console/assets/main.js`)).status, 404);
    } finally {
      await gw.close();
    }
  });
});

describeInBrowser(`console in headless Chromium [${kind}]`, (b) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let other: Tenant;

  before(async () => {
    gw = await startGateway(kind);
    tenant = await newTenant(gw);
    other = await newTenant(gw);
    // Tenant strings that would run script if they were rendered as HTML: a namespace property and a row value
    // (names themselves allow only [A-Za-z0-9_.-]).
    const ns = await tenant.api.post('/v1/namespace/ns1/create', { properties: { note: XSS } });
    assert.equal(ns.status, 200, ns.text);
    await createTable(tenant, 'ns1$t1', rowsStream(XSS));
    await createTable(other, 'secret_of_other', rowsStream('other'));
    b.url = gw.url;
    await b.launch();
  });
  after(async () => {
    await gw?.close();
  });

  it('serves the page with a Content-Security-Policy without inline script, and fingerprinted assets cached for good', async () => {
    const page = await fetch(`${gw.url}/console`);
    assert.equal(page.status, 200);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    const html = await page.text();
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    const script = /src="(\/console\/assets\/main-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    assert.ok(script, html);
    const asset = await fetch(gw.url + script);
    assert.equal(asset.status, 200);
    assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.match(asset.headers.get('content-type') ?? '', /javascript/);
    assert.ok(asset.headers.get('content-security-policy'));
    assert.equal((await fetch(`${gw.url}/console/assets/missing-AAAA.js`)).status, 404);
  });

  it('the operator signs in, creates a database and a key (its secret shown once), revokes it and sees the fleet', async () => {
    const { page, dialogs, errors } = await b.newPage();
    await b.signIn(page, ADMIN_KEY);
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    // The key is in this tab's session storage only, never in the URL or in long-lived storage.
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    assert.match(await page.evaluate(() => sessionStorage.getItem('lgw-console-session') ?? ''), new RegExp(ADMIN_KEY));
    assert.ok(!page.url().includes(ADMIN_KEY));

    await page.getByLabel('New database name').fill('console_db');
    await page.getByRole('button', { name: 'Create database' }).click();
    await page.getByRole('status').filter({ hasText: 'Created database console_db.' }).waitFor();
    const fleet = page.getByRole('table', { name: 'Databases' });
    for (const name of ['console_db', tenant.name, other.name]) await fleet.getByRole('link', { name, exact: true }).waitFor();
    assert.equal((await operator(gw).get('/admin/v1/databases/console_db')).status, 200);

    await fleet.getByRole('link', { name: 'console_db', exact: true }).click();
    await page.getByRole('heading', { name: 'Database console_db' }).waitFor();
    await page.getByRole('heading', { name: 'Settings and quotas' }).waitFor();
    await page.getByRole('navigation', { name: 'Database' }).getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Role').selectOption('write');
    await page.getByLabel('Key name (optional)').fill('from-the-console');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByLabel('Secret').inputValue();
    assert.match(secret, /^lgw_/);
    // The secret works, and the page drops it once dismissed: it is not shown again.
    const keyed = new Api(gw.url, { 'x-api-key': secret, 'x-service-database': 'console_db' });
    assert.equal((await keyed.get('/v1/namespace/%24/list')).status, 200);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    assert.equal(await page.getByLabel('Secret').count(), 0);
    assert.ok(!(await page.content()).includes(secret));
    const keys = page.getByRole('table', { name: 'API keys' });
    const row = keys.getByRole('row').filter({ hasText: 'from-the-console' });
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /write/);

    // Revoking asks for a confirmation on the page (no browser dialog), then the key stops working.
    await row.getByRole('button', { name: /^Revoke key / }).click();
    await row.getByRole('button', { name: /^Confirm revoke/ }).click();
    await row.filter({ hasText: 'revoked' }).waitFor();
    assert.equal((await keyed.get('/v1/namespace/%24/list')).status, 401);

    await page.getByRole('link', { name: 'Fleet' }).click();
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    await page.getByRole('heading', { name: 'Top databases by storage' }).waitFor();
    await page.getByRole('heading', { name: 'Top databases by requests today' }).waitFor();
    // The health of the catalog, Redis and each storage profile.
    const health = page.getByRole('table', { name: 'Health' });
    assert.match((await health.getByRole('row').filter({ hasText: 'Catalog' }).textContent()) ?? '', /up.*answered in \d+ ms/);
    assert.match((await health.getByRole('row').filter({ hasText: 'Storage profile default' }).textContent()) ?? '', /up/);
    await health.getByRole('row').filter({ hasText: 'Redis' }).waitFor();
    // The charts over time have their data as tables (48 hours, 30 days).
    assert.equal(
      await page
        .getByRole('table', { name: 'Fleet requests per hour data', includeHidden: true })
        .getByRole('row', { includeHidden: true })
        .count(),
      49,
    );
    assert.equal(
      await page
        .getByRole('table', { name: 'Fleet storage per day data', includeHidden: true })
        .getByRole('row', { includeHidden: true })
        .count(),
      31,
    );
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
  });

  it("shows a database's properties as text on its page", async () => {
    const created = await operator(gw).post('/admin/v1/databases', { name: 'xss_props', properties: { owner: XSS } });
    assert.equal(created.status, 201, created.text);
    const { page, dialogs, errors } = await b.newPage();
    await b.signIn(page, ADMIN_KEY);
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    await page.goto(`${gw.url}/console#/db/xss_props/overview`);
    await page.getByText('Property owner').waitFor();
    assert.equal(await page.locator('dd', { hasText: XSS }).textContent(), XSS);
    assert.equal(await page.locator('img').count(), 0);
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
  });

  it("a database key sees its own database's namespaces and tables only, with tenant strings as text", async () => {
    const { page, dialogs, errors } = await b.newPage();
    await b.signIn(page, tenant.readKey, tenant.name);
    await page.getByRole('heading', { name: 'Namespaces and tables' }).waitFor();
    const tree = page.getByRole('tree', { name: 'Namespace tree' });
    await tree.getByRole('button', { name: 'ns1', exact: true }).click();
    await page.getByRole('heading', { name: 'Namespace ns1' }).waitFor();
    const props = page.getByLabel('Namespace properties');
    const note = props.locator('div').filter({ has: page.locator('dt', { hasText: /^note$/ }) });
    assert.equal(await note.locator('dd').textContent(), XSS);
    const tables = page.getByRole('list', { name: 'Tables' });
    await tables.getByRole('link', { name: 't1', exact: true }).waitFor();
    assert.ok(!(await page.content()).includes('secret_of_other'));

    await tables.getByRole('link', { name: 't1', exact: true }).click();
    await page.getByRole('heading', { name: 'Table ns1 / t1' }).waitFor();
    const schema = page.getByRole('table', { name: 'Schema' });
    for (const col of ['id', 'name', 'vector']) await schema.getByRole('cell', { name: col, exact: true }).waitFor();
    const rows = page.getByRole('table', { name: 'Rows' });
    await rows.getByRole('cell', { name: XSS, exact: true }).waitFor();
    // A long vector is abbreviated.
    const rowsText = (await rows.textContent()) ?? '';
    assert.match(rowsText, /\[0, 0\.0625, 0\.125, 0\.1875, 0\.25, 0\.3125, … \(16 values\)\]/, rowsText);
    assert.equal(await page.locator('img').count(), 0, 'no element was made from a tenant string');

    // A read key is offered nothing that would fail: no key management (and the page refuses it when asked).
    const tabs = page.getByRole('navigation', { name: 'Database' });
    await tabs.getByText('read key').waitFor();
    assert.equal(await tabs.getByRole('link', { name: 'API keys' }).count(), 0);
    await page.goto(`${gw.url}/console#/db/${tenant.name}/keys`);
    await page.getByText('This key may not manage API keys').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Create key' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: /Revoke/ }).count(), 0);

    // Another database's tables are not reachable with this key: the API refuses, and the page says so.
    await page.goto(`${gw.url}/console#/db/${other.name}/table/secret_of_other`);
    await page
      .getByRole('alert')
      .filter({ hasText: /not valid for database/ })
      .waitFor();
    assert.ok(!(await page.getByRole('table', { name: 'Rows' }).count()));
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
  });

  it('has no serious or critical accessibility violations (axe-core) on any page', async () => {
    const tab = await b.newPage();
    const { page } = tab;
    const found: string[] = [];
    const check = async (what: string) => {
      for (const v of await a11yViolations(page)) found.push(`${what}: ${v}`);
    };
    await page.goto(`${gw.url}/console`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await check('sign-in');
    await b.signIn(page, ADMIN_KEY);
    await page.getByRole('table', { name: 'Health' }).waitFor();
    await check('fleet');
    const pages: [string, string][] = [
      ['overview', 'Settings and quotas'],
      ['keys', 'API keys'],
      ['tables', 'Namespaces and tables'],
      ['jobs', 'Jobs'],
      ['audit', 'Audit trail'],
      ['dropped', 'Dropped tables'],
    ];
    for (const [path, heading] of pages) {
      await page.goto(`${gw.url}/console#/db/${tenant.name}/${path}`);
      await page.getByRole('heading', { name: heading, exact: true }).first().waitFor();
      await check(path);
    }
    await page.goto(`${gw.url}/console#/db/${tenant.name}/table/ns1$t1`);
    await page.getByRole('table', { name: 'Rows' }).waitFor();
    await check('table');
    assert.deepEqual(found, []);
    assertClean(tab);
    // The check finds what it is for: a control without a label, added by the test (through DevTools, not the page).
    await page.evaluate("document.querySelector('main').appendChild(document.createElement('select'))");
    assert.match((await a11yViolations(page)).join('\n'), /select-name \(critical\)/);
  });

  it('prefixes the REST routes with BASE_PATH (and not the operator API)', async () => {
    const prefixed = await startGateway(kind, { BASE_PATH: '/lance' });
    let closeFirst: BrowserContext | undefined;
    try {
      const t = await newTenant(prefixed);
      const r = await t.api.request('POST', `/lance/v1/table/plain/create`, rowsStream('under a base path'), {
        'content-type': ARROW_STREAM,
      });
      assert.equal(r.status, 200, r.text);
      const { page, errors, context } = await b.newPage();
      closeFirst = context;
      await page.goto(`${prefixed.url}/console`);
      await page.getByLabel('Database key').check();
      await page.getByLabel('Database', { exact: true }).fill(t.name);
      await page.getByLabel('API key').fill(t.readKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('list', { name: 'Tables' }).getByRole('link', { name: 'plain', exact: true }).click();
      await page.getByRole('table', { name: 'Rows' }).getByRole('cell', { name: 'under a base path', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('API key').fill(ADMIN_KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('table', { name: 'Databases' }).getByRole('link', { name: t.name, exact: true }).waitFor();
      assert.deepEqual(errors, []);
    } finally {
      // The browser's keep-alive connections would hold the gateway's close until they time out.
      await closeFirst?.close();
      await prefixed.close();
    }
  });

  it('refuses a database key for another database at sign-in (the form used by keyboard alone)', async () => {
    const { page, errors } = await b.newPage();
    await page.goto(`${gw.url}/console`);
    await page.keyboard.press('Tab'); // the credential radio group (operator key checked)
    await page.keyboard.press('ArrowDown'); // database key
    assert.equal(await page.getByLabel('Database key').isChecked(), true);
    await page.keyboard.press('Tab');
    await page.keyboard.type(tenant.readKey);
    await page.keyboard.press('Tab');
    await page.keyboard.type(other.name);
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'Sign-in refused' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    assert.deepEqual(errors, []);
  });
});
