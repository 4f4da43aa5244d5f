import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import * as arrow from 'apache-arrow';
import type { Page } from 'playwright-core';
import { ADMIN_KEY, CATALOG_KINDS, eventually, newTenant, startGateway, type Tenant, type TestGateway } from './helpers/gateway';
import { ARROW_STREAM } from './helpers/arrow-craft';
import { describeInBrowser, XSS } from './helpers/browser';

/**
 * The console's Tables and Table pages (docs/console.md) in a real headless Chromium: a namespace of 1,000 tables
 * paged through and searched by prefix, and a table's statistics, versions, tags, branches, indices and query box,
 * for the operator and a database read key. Runs on the first catalog of TEST_CATALOGS only.
 */
const kind = CATALOG_KINDS[0] ?? 'postgres';
const MANY = 1000;
const tableName = (i: number) => `t${String(i).padStart(4, '0')}`;

/** A vector per id, far from every other id's. */
const vectorOf = (id: number) => Array.from({ length: 16 }, (_, j) => Math.sin(id * 1.7 + j * 0.3) * id);

const TEXTS: Record<number, string> = {
  1: 'the quick brown fox',
  2: 'lazy dog sleeps',
  3: XSS,
  4: 'another plain row',
  5: 'second write one',
  6: 'second write two',
};

function rowsStream(ids: number[]): Buffer {
  const table = new arrow.Table({
    id: arrow.vectorFromArray(Int32Array.from(ids)),
    text: arrow.vectorFromArray(
      ids.map((i) => TEXTS[i]),
      new arrow.Utf8(),
    ),
    vector: arrow.vectorFromArray(ids.map(vectorOf), new arrow.FixedSizeList(16, new arrow.Field('item', new arrow.Float32(), true))),
  });
  return Buffer.from(arrow.tableToIPC(table, 'stream'));
}

describeInBrowser(`console tables and table pages in headless Chromium [${kind}]`, (b) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let versionCount = 0;

  /** The names of the tables listed on the page, once the list shows `first` first. */
  async function listed(page: Page, first: string): Promise<string[]> {
    const list = page.getByRole('list', { name: 'Tables' });
    await list
      .getByRole('link')
      .first()
      .filter({ hasText: new RegExp(`^${first}$`) })
      .waitFor();
    return list.getByRole('link').allTextContents();
  }

  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => tableName(from + i));

  before(async () => {
    gw = await startGateway(kind);
    tenant = await newTenant(gw);
    const ns = await tenant.api.post('/v1/namespace/many/create', {});
    assert.equal(ns.status, 200, ns.text);
    // 1,000 declared tables, 50 requests at a time; a 503 (the catalog's pool busy on a loaded machine) is retried
    // after its Retry-After, as the official clients do.
    for (let i = 0; i < MANY; i += 50) {
      await Promise.all(
        range(i, Math.min(i + 50, MANY)).map(async (name) => {
          let r = await tenant.api.post(`/v1/table/many%24${name}/declare`, {});
          let retries = 0;
          for (; r.status === 503 && retries < 5; retries++) {
            await new Promise((done) => setTimeout(done, 1000 * Number(r.headers.get('retry-after') ?? 1)));
            r = await tenant.api.post(`/v1/table/many%24${name}/declare`, {});
          }
          // After a retry, 409: the attempt that was answered 503 had declared it.
          assert.ok(r.status === 200 || (retries > 0 && r.status === 409), r.text);
        }),
      );
    }
    const post = async (path: string, body: unknown, status = 200) => {
      const r = Buffer.isBuffer(body)
        ? await tenant.api.request('POST', path, body, { 'content-type': ARROW_STREAM })
        : await tenant.api.post(path, body);
      assert.equal(r.status, status, `${path}: ${r.text}`);
      return r;
    };
    await post('/v1/table/items/create', rowsStream([1, 2, 3, 4]));
    await post('/v1/table/items/insert', rowsStream([5, 6]));
    const two = await post('/v1/table/items/version/list', {});
    assert.equal(two.body.versions.length, 2, 'a second write makes a second version');
    await post('/v1/table/items/tags/create', { tag: 'first_release', version: 1 });
    await post('/v1/table/items/branches/create', { name: 'side_branch' });
    await post('/v1/table/items/create_index', { column: 'text', index_type: 'FTS' });
    await post('/v1/table/items/create_index', { column: 'id', index_type: 'BTREE' });
    versionCount = (await post('/v1/table/items/version/list', {})).body.versions.length;
    b.url = gw.url;
    await b.launch();
  });
  after(async () => {
    await gw?.close();
  });

  it('the operator pages through 1,000 tables and finds them by prefix', async () => {
    const { page, dialogs, errors } = await b.newPage();
    await b.signIn(page, ADMIN_KEY);
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    await page.goto(`${gw.url}/console#/db/${tenant.name}/tables`);
    await page.getByRole('tree', { name: 'Namespace tree' }).getByRole('button', { name: 'many', exact: true }).click();
    await page.getByRole('heading', { name: 'Namespace many' }).waitFor();
    assert.deepEqual(await listed(page, 't0000'), range(0, 50));
    const next = page.getByRole('button', { name: 'Next tables' });
    const previous = page.getByRole('button', { name: 'Previous tables' });
    assert.equal(await previous.isDisabled(), true);
    for (let p = 1; p < MANY / 50; p++) {
      await next.click();
      await page.getByText(`Page ${p + 1}`, { exact: true }).waitFor();
      const names = await listed(page, tableName(p * 50));
      if (p === 10 || p === 19) assert.deepEqual(names, range(p * 50, p * 50 + 50));
    }
    // The last page: nothing after it.
    assert.equal(await next.isDisabled(), true);
    await previous.click();
    assert.deepEqual(await listed(page, 't0900'), range(900, 950));

    // By prefix: the listing starts at the prefix, two pages of t05xx, then nothing more.
    const search = page.getByLabel('Table name prefix');
    await search.fill('t05');
    await page.getByRole('button', { name: 'Search tables' }).click();
    assert.deepEqual(await listed(page, 't0500'), range(500, 550));
    assert.equal(await previous.isDisabled(), true);
    await next.click();
    assert.deepEqual(await listed(page, 't0550'), range(550, 600));
    assert.equal(await next.isDisabled(), true);
    await previous.click();
    assert.deepEqual(await listed(page, 't0500'), range(500, 550));
    // A prefix that is a whole name lists that table too.
    await search.fill('t0999');
    await search.press('Enter');
    assert.deepEqual(await listed(page, 't0999'), ['t0999']);
    await search.fill('t1');
    await search.press('Enter');
    await page.getByText('No table name starts with “t1”.').waitFor();
    assert.equal(await page.getByRole('list', { name: 'Tables' }).getByRole('link').count(), 0);
    // A declared table opens as such.
    await search.fill('t0042');
    await search.press('Enter');
    await page.getByRole('list', { name: 'Tables' }).getByRole('link', { name: 't0042', exact: true }).click();
    await page.getByRole('heading', { name: 'Table many / t0042' }).waitFor();
    await page.getByText('(declared, no data yet)').waitFor();
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
  });

  for (const who of ['operator', 'read key'] as const) {
    it(`${who}: a table's statistics, versions, tags, branches and indices, and the query box`, async () => {
      const { page, dialogs, errors } = await b.newPage();
      if (who === 'operator') {
        await b.signIn(page, ADMIN_KEY);
        await page.getByRole('heading', { name: 'Fleet' }).waitFor();
      } else {
        await b.signIn(page, tenant.readKey, tenant.name);
        await page.getByRole('heading', { name: 'Namespaces and tables' }).waitFor();
      }
      await page.goto(`${gw.url}/console#/db/${tenant.name}/tables`);
      await page.getByRole('list', { name: 'Tables' }).getByRole('link', { name: 'items', exact: true }).click();
      await page.getByRole('heading', { name: 'Table items' }).waitFor();

      const stats = page.getByLabel('Table statistics');
      const fact = async (name: string) => {
        const row = stats.locator('div').filter({ has: page.locator('dt', { hasText: new RegExp(`^${name}$`) }) });
        return (await row.locator('dd').textContent()) ?? '';
      };
      await stats.waitFor();
      assert.equal(await fact('Rows'), '6');
      assert.match(await fact('Fragments'), /^2 \(\d+ small\)$/);
      assert.match(await fact('Bytes'), /^\d+(\.\d)? (B|KiB|MiB)$/);
      assert.equal(await fact('Indices'), '2');
      assert.match(await fact('Unindexed rows'), /^0 /);

      const indices = page.getByRole('table', { name: 'Indices' });
      const fts = indices.getByRole('row').filter({ hasText: 'text_idx' });
      await fts.waitFor();
      assert.match((await fts.textContent()) ?? '', /text_idx\s*text\s*FTS/);
      await indices.getByRole('row').filter({ hasText: 'id_idx' }).filter({ hasText: 'BTREE' }).waitFor();
      // The indexed rows come from the index statistics route.
      await fts.getByRole('cell', { name: '6', exact: true }).waitFor();

      const versions = page.getByRole('table', { name: 'Versions' });
      await versions.waitFor();
      assert.ok(versionCount >= 2);
      assert.equal(await versions.locator('tbody tr').count(), versionCount);
      const v1 = versions.locator('tbody tr').last();
      assert.match((await v1.textContent()) ?? '', /^1.*first_release/);
      const tags = page.getByRole('table', { name: 'Tags' });
      await tags.getByRole('row').filter({ hasText: 'first_release' }).filter({ hasText: 'main' }).waitFor();
      await page.getByRole('table', { name: 'Branches' }).getByRole('cell', { name: 'side_branch', exact: true }).waitFor();

      const schema = page.getByRole('table', { name: 'Schema' });
      await schema.getByRole('cell', { name: 'vector', exact: true }).waitFor();

      // The tenant's strings are text.
      const rows = page.getByRole('table', { name: 'Rows' });
      await rows.getByRole('cell', { name: XSS, exact: true }).waitFor();
      assert.equal(await page.locator('img').count(), 0);

      const results = page.getByRole('table', { name: 'Query results' });
      let runs = 0;
      const status = () => page.getByRole('status').filter({ hasText: new RegExp(`^Query ${runs}: \\d+ rows? found in \\d+ ms$`) });
      const resultIds = async () => (await results.locator('tbody tr').locator('td:first-child').allTextContents()).map(Number);
      const run = async () => {
        runs++;
        await page.getByRole('button', { name: 'Run query' }).click();
        await status().waitFor();
      };

      // A filter.
      await page.getByLabel('Filter (SQL where)').fill('id >= 4 AND id < 6');
      await run();
      assert.deepEqual((await resultIds()).sort(), [4, 5]);
      assert.match((await status().textContent()) ?? '', /: 2 rows found in \d+ ms$/);

      // A bad filter: the API's message, no rows.
      await page.getByLabel('Filter (SQL where)').fill('no_such_column = 1');
      runs++;
      await page.getByRole('button', { name: 'Run query' }).click();
      const alert = page.getByRole('alert').filter({ hasText: /^4\d\d / });
      await alert.waitFor();
      assert.match((await alert.textContent()) ?? '', /no_such_column/);
      assert.equal(await results.count(), 0);
      await page.getByLabel('Filter (SQL where)').fill('');

      // A vector search from a row's vector: that row first, with its distance.
      await rows
        .getByRole('row')
        .filter({ hasText: 'lazy dog sleeps' })
        .getByRole('button', { name: /^Use the vector of row/ })
        .click();
      // The click's handler fills the form after the click returns: wait for it (a loaded machine renders late).
      const searchKind = page.getByLabel('Search', { exact: true });
      await eventually(async () => (await searchKind.inputValue()) === 'vector').catch(() => undefined);
      assert.equal(await searchKind.inputValue(), 'vector');
      assert.match(await page.getByLabel('Vector (JSON or comma-separated)').inputValue(), /^\[-?\d/);
      await page.getByLabel('Rows (k)').fill('3');
      await run();
      const ids = await resultIds();
      assert.equal(ids.length, 3);
      assert.equal(ids[0], 2);
      await results.getByRole('columnheader', { name: '_distance' }).waitFor();
      assert.match((await results.textContent()) ?? '', /\(16 values\)/, 'long vectors abbreviated');

      // A pasted vector (comma-separated), row 5's.
      await page.getByLabel('Vector (JSON or comma-separated)').fill(vectorOf(5).join(', '));
      await run();
      assert.equal((await resultIds())[0], 5);

      // Full-text search on the indexed column.
      await page.getByLabel('Search', { exact: true }).selectOption('fts');
      assert.equal(await page.getByLabel('Text column').inputValue(), 'text');
      await page.getByLabel('Words').fill('fox');
      await run();
      assert.deepEqual(await resultIds(), [1]);
      await results.getByRole('cell', { name: 'the quick brown fox', exact: true }).waitFor();
      // The XSS row found by a filter shows as text.
      await page.getByLabel('Search', { exact: true }).selectOption('filter');
      await page.getByLabel('Filter (SQL where)').fill('id = 3');
      await run();
      await results.getByRole('cell', { name: XSS, exact: true }).waitFor();
      assert.equal(await page.locator('img').count(), 0);
      assert.deepEqual(dialogs, []);
      assert.deepEqual(errors, []);
    });
  }
});
