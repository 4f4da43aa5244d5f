import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as pg from 'pg';
import { CATALOG_DB, CatalogDb } from '../src/platform/db/catalog-db';
import {
  Api,
  eventually,
  forEachCatalog,
  idPath,
  newTenant,
  pgUrlFor,
  Reply,
  Tenant,
  TestGateway,
  rawRequest,
  startGateway,
  TEST_STORAGE,
} from './helpers/gateway';
import { expectProblem } from './helpers/assertions';
import { appendRows, branchAndAdd, countRows, writeTable } from './helpers/lance';
import * as stored from './helpers/stored';

/**
 * Tables of the Lance Namespace REST contract (docs/rest-contract.md §2.2, §4.5, §4.6, §7; the Lance Namespace spec for the rest): declare,
 * register, describe, exists, list, list-all, rename, drop, deregister and stats, against real Lance data written
 * with the official engine at the locations the server hands out.
 */

type Row = { id: number; vector: number[] };

const rows = (from: number, n: number): Row[] => Array.from({ length: n }, (_, i) => ({ id: from + i, vector: [0.1 * (from + i), 0.2] }));

const hasVersions = stored.hasVersions;

/**
 * What a declared table leaves on storage before any client writes: an empty folder the gateway made (local), or
 * nothing at all (object stores have no empty folders; the engine writes the first object).
 */
async function expectDeclaredOnly(location: string): Promise<void> {
  if (TEST_STORAGE === 's3') assert.equal(await stored.exists(location), false, `${location} holds objects before any write`);
  else assert.ok(fs.statSync(location).isDirectory(), `${location} is not a folder`);
  assert.equal(await hasVersions(location), false);
}

function expectOk(r: Reply, status = 200): void {
  assert.equal(r.status, status, `expected ${status}, got ${r.status}: ${r.text}`);
}

const createNs = async (api: Api, ...parts: string[]) => expectOk(await api.post(`/v1/namespace/${idPath(...parts)}/create`, {}));

async function declare(api: Api, ...id: string[]): Promise<string> {
  const r = await api.post(`/v1/table/${idPath(...id)}/declare`, {});
  expectOk(r);
  return r.body.location as string;
}

/** Follows page tokens to the end; checks every page against `limit` and returns every page. */
async function allPages(api: Api, base: string, limit: number): Promise<string[][]> {
  const pages: string[][] = [];
  let token: string | undefined;
  for (let i = 0; i < 1000; i++) {
    const sep = base.includes('?') ? '&' : '?';
    const r = await api.get(`${base}${sep}limit=${limit}${token ? `&page_token=${encodeURIComponent(token)}` : ''}`);
    expectOk(r);
    assert.ok(Array.isArray(r.body.tables));
    assert.ok(r.body.tables.length <= limit, `page of ${r.body.tables.length} exceeds limit ${limit}`);
    pages.push(r.body.tables);
    token = r.body.page_token;
    if (token === undefined || token === null || token === '') return pages;
    assert.equal(typeof token, 'string');
  }
  throw new Error('pagination did not end');
}

const sorted = (xs: string[]) => [...xs].sort();

forEachCatalog('tables', (kind) => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway(kind);
  });
  after(() => gw.close());

  const dbFolder = (t: Tenant) => stored.dbFolder(gw, t.name);
  /** Locations are absolute: a path on the local store, an s3:// URI under the storage root on the object store. */
  const isAbsolute = (loc: string) => (TEST_STORAGE === 's3' ? loc.startsWith(gw.config.storageRoot + '/') : path.isAbsolute(loc));

  describe('declare', () => {
    it('returns an absolute, existing .lance folder inside the database folder, with properties', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'ns');
      const r = await t.api.post(`/v1/table/${idPath('ns', 't1')}/declare`, { properties: { owner: 'alice' } });
      expectOk(r);
      const loc = r.body.location as string;
      assert.ok(isAbsolute(loc), loc);
      assert.ok(stored.isInside(loc, dbFolder(t)), `${loc} not inside ${dbFolder(t)}`);
      assert.match(loc, /\.lance$/);
      assert.deepEqual(r.body.properties, { owner: 'alice' });
      await expectDeclaredOnly(loc);

      const d = await t.api.post(`/v1/table/${idPath('ns', 't1')}/describe`, {});
      expectOk(d);
      assert.equal(d.body.location, loc);
      assert.deepEqual(d.body.properties, { owner: 'alice' });

      // The client writes there, and the data lands in the table's own folder of the database folder.
      await writeTable(loc, rows(0, 2));
      assert.ok(await hasVersions(loc));
      assert.deepEqual(await stored.entries(dbFolder(t)), [stored.basename(loc)]);
    });

    it('gives every table its own folder', async () => {
      const t = await newTenant(gw);
      const a = await declare(t.api, 'a');
      const b = await declare(t.api, 'b');
      assert.notEqual(a, b);
    });

    it('declaring twice is 409 code 5 and keeps the first location', async () => {
      const t = await newTenant(gw);
      const loc = await declare(t.api, 'dup');
      expectProblem(await t.api.post(`/v1/table/${idPath('dup')}/declare`, {}), 409, 5);
      const d = await t.api.post(`/v1/table/${idPath('dup')}/describe`, {});
      assert.equal(d.body.location, loc);
      // The failed declare left no folder behind: only the first table's (empty) folder locally; on an object store,
      // where a declared table has no objects yet, nothing at all.
      assert.deepEqual(await stored.entries(dbFolder(t)), TEST_STORAGE === 's3' ? [] : [stored.basename(loc)]);
      await writeTable(loc, rows(0, 1));
      assert.deepEqual(await stored.entries(dbFolder(t)), [stored.basename(loc)]);
    });

    it('in a missing namespace is 404 code 1', async () => {
      const t = await newTenant(gw);
      expectProblem(await t.api.post(`/v1/table/${idPath('nope', 't')}/declare`, {}), 404, 1);
      expectProblem(await t.api.post(`/v1/table/${idPath('nope', 't')}/exists`, {}), 404, 1);
      assert.deepEqual(await stored.entries(dbFolder(t)), [], 'a failed declare leaves no folder behind');
    });

    it('a location other than the server-chosen one is 400 code 13 and declares nothing', async () => {
      const t = await newTenant(gw);
      const wanted = stored.join(dbFolder(t), 'mine.lance');
      expectProblem(await t.api.post(`/v1/table/${idPath('t')}/declare`, { location: wanted }), 400, 13);
      expectProblem(await t.api.post(`/v1/table/${idPath('t')}/exists`, {}), 404, 4);
      assert.equal(await stored.exists(wanted), false);
    });

    it('a table at the root namespace (id just the name) works', async () => {
      const t = await newTenant(gw);
      const loc = await declare(t.api, 'rooted');
      const d = await t.api.post(`/v1/table/${idPath('rooted')}/describe`, {});
      expectOk(d);
      assert.equal(d.body.table, 'rooted');
      assert.deepEqual(d.body.namespace, []);
      assert.equal(d.body.location, loc);
      const l = await t.api.get(`/v1/namespace/${idPath()}/table/list`);
      expectOk(l);
      assert.deepEqual(l.body.tables, ['rooted']);
    });

    it("names '.' and '..' are accepted and stay inside the database folder", async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'dots');
      const inside = async (loc: string) => {
        assert.ok(isAbsolute(loc));
        const rel = stored.relative(dbFolder(t), loc);
        assert.ok(rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel), `${loc} escapes ${dbFolder(t)}`);
        assert.match(loc, /[0-9a-f-]{36}\.lance$/);
        await expectDeclaredOnly(loc);
      };
      const one = await declare(t.api, 'dots', '.');
      const two = await declare(t.api, 'dots', '..');
      await inside(one);
      await inside(two);
      assert.notEqual(one, two);

      // At the root the segment alone would be a dot-segment a URL parser folds away: send it raw, percent-encoded.
      const headers = t.api.headers;
      const rootDot = await rawRequest(gw.url, 'POST', '/v1/table/%2E/declare', headers, {});
      expectOk(rootDot);
      const rootDotDot = await rawRequest(gw.url, 'POST', '/v1/table/%2E%2E/declare', headers, {});
      expectOk(rootDotDot);
      await inside(rootDot.body.location);
      await inside(rootDotDot.body.location);

      const d = await rawRequest(gw.url, 'POST', '/v1/table/%2E%2E/describe', headers, {});
      expectOk(d);
      assert.equal(d.body.table, '..');
      assert.equal(d.body.location, rootDotDot.body.location);

      const l = await t.api.get(`/v1/namespace/${idPath('dots')}/table/list`);
      assert.deepEqual(sorted(l.body.tables), ['.', '..']);
      const all = await t.api.get('/v1/table');
      assert.deepEqual(sorted(all.body.tables), sorted(['.', '..', 'dots$.', 'dots$..']));
    });

    it('a read key is 403 code 15 (and may still describe)', async () => {
      const t = await newTenant(gw);
      expectProblem(await t.reader.post(`/v1/table/${idPath('r')}/declare`, {}), 403, 15);
      expectProblem(await t.api.post(`/v1/table/${idPath('r')}/exists`, {}), 404, 4);
      await declare(t.api, 'r');
      expectOk(await t.reader.post(`/v1/table/${idPath('r')}/describe`, {}));
      expectProblem(await t.reader.post(`/v1/table/${idPath('r')}/drop`, {}), 403, 15);
    });
  });

  describe('describe and exists', () => {
    it('describes table, namespace, location, table_uri and properties', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'a');
      await createNs(t.api, 'a', 'b');
      const loc = await declare(t.api, 'a', 'b', 'tbl');
      const d = await t.api.post(`/v1/table/${idPath('a', 'b', 'tbl')}/describe`, {});
      expectOk(d);
      assert.equal(d.body.table, 'tbl');
      assert.deepEqual(d.body.namespace, ['a', 'b']);
      assert.equal(d.body.location, loc);
      assert.equal(d.body.table_uri, loc);
      assert.deepEqual(d.body.properties, {});
      assert.equal('is_only_declared' in d.body, false);
    });

    it('check_declared tells declared-only from written tables; load_detailed_metadata gives the version', async () => {
      const t = await newTenant(gw);
      const loc = await declare(t.api, 'cd');
      const p = `/v1/table/${idPath('cd')}/describe`;
      let d = await t.api.post(`${p}?check_declared=true`, {});
      expectOk(d);
      assert.equal(d.body.is_only_declared, true);
      d = await t.api.post(p, { check_declared: true });
      assert.equal(d.body.is_only_declared, true);
      d = await t.api.post(`${p}?load_detailed_metadata=true`, {});
      expectOk(d);
      assert.equal(d.body.is_only_declared, true);
      assert.equal(d.body.version ?? null, null);

      await writeTable(loc, rows(0, 3));
      d = await t.api.post(`${p}?check_declared=true`, {});
      assert.equal(d.body.is_only_declared, false);
      d = await t.api.post(p, { check_declared: true });
      assert.equal(d.body.is_only_declared, false);

      await appendRows(loc, rows(3, 2));
      d = await t.api.post(`${p}?load_detailed_metadata=true`, {});
      expectOk(d);
      assert.ok(Number.isInteger(d.body.version) && d.body.version > 0, `version ${d.body.version}`);
      d = await t.api.post(p, { load_detailed_metadata: true });
      assert.ok(Number.isInteger(d.body.version) && d.body.version >= 2, `version after an append ${d.body.version}`);
    });

    it('a query parameter overrides the body field', async () => {
      const t = await newTenant(gw);
      await declare(t.api, 'q');
      const d = await t.api.post(`/v1/table/${idPath('q')}/describe?check_declared=false`, { check_declared: true });
      expectOk(d);
      assert.equal('is_only_declared' in d.body, false);
    });

    it('missing table is 404 code 4; missing namespace is 404 code 1', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'ns');
      expectProblem(await t.api.post(`/v1/table/${idPath('ns', 'none')}/describe`, {}), 404, 4);
      expectProblem(await t.api.post(`/v1/table/${idPath('none')}/describe`, {}), 404, 4);
      expectProblem(await t.api.post(`/v1/table/${idPath('ghost', 'none')}/describe`, {}), 404, 1);
    });

    it('exists is 200 with an empty body, or 404 code 4', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'ns');
      await declare(t.api, 'ns', 'here');
      const r = await t.api.post(`/v1/table/${idPath('ns', 'here')}/exists`, {});
      expectOk(r);
      assert.equal(r.text, '');
      expectProblem(await t.api.post(`/v1/table/${idPath('ns', 'there')}/exists`, {}), 404, 4);
    });

    it('a body id that disagrees with the path is 400 code 13', async () => {
      const t = await newTenant(gw);
      await declare(t.api, 'x');
      expectProblem(await t.api.post(`/v1/table/${idPath('x')}/describe`, { id: ['y'] }), 400, 13);
      expectOk(await t.api.post(`/v1/table/${idPath('x')}/describe`, { id: ['x'] }));
    });
  });

  describe('list tables of a namespace', () => {
    it('lists direct children only, by name', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'p');
      await createNs(t.api, 'p', 'c');
      await declare(t.api, 'p', 'one');
      await declare(t.api, 'p', 'two');
      await declare(t.api, 'p', 'c', 'deep');
      await declare(t.api, 'top');
      const r = await t.api.get(`/v1/namespace/${idPath('p')}/table/list`);
      expectOk(r);
      assert.deepEqual(sorted(r.body.tables), ['one', 'two']);
      assert.equal(r.body.page_token ?? undefined, undefined);
      const c = await t.api.get(`/v1/namespace/${idPath('p', 'c')}/table/list`);
      assert.deepEqual(c.body.tables, ['deep']);
      const root = await t.api.get(`/v1/namespace/${idPath()}/table/list`);
      assert.deepEqual(root.body.tables, ['top']);
    });

    it('include_declared=false hides declared-only tables until data is written', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'ns');
      const loc = await declare(t.api, 'ns', 'later');
      await declare(t.api, 'ns', 'never');
      const p = `/v1/namespace/${idPath('ns')}/table/list`;
      assert.deepEqual(sorted((await t.api.get(p)).body.tables), ['later', 'never']);
      assert.deepEqual((await t.api.get(`${p}?include_declared=true`)).body.tables.length, 2);
      let r = await t.api.get(`${p}?include_declared=false`);
      expectOk(r);
      assert.deepEqual(r.body.tables, []);
      await writeTable(loc, rows(0, 2));
      r = await t.api.get(`${p}?include_declared=false`);
      assert.deepEqual(r.body.tables, ['later']);
    });

    it('paginates with limit/page_token covering every table exactly once', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'ns');
      const names = Array.from({ length: 12 }, (_, i) => `t${String(i).padStart(2, '0')}`);
      for (const n of names) await declare(t.api, 'ns', n);
      const pages = await allPages(t.api, `/v1/namespace/${idPath('ns')}/table/list`, 5);
      assert.deepEqual(
        pages.map((p) => p.length),
        [5, 5, 2],
      );
      const flat = pages.flat();
      assert.equal(new Set(flat).size, flat.length);
      assert.deepEqual(sorted(flat), names);
    });

    it('prefix: only the names that start with it, paged, the prefix itself included; a bad prefix is a 400', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'ns');
      for (const n of ['a', 'ab', 'ab.x', 'ab-y', 'ab_z', 'abc', 'abd', 'ac', 'b']) await declare(t.api, 'ns', n);
      const p = `/v1/namespace/${idPath('ns')}/table/list`;
      const pages = await allPages(t.api, `${p}?prefix=ab`, 2);
      assert.deepEqual(pages, [
        ['ab', 'ab-y'],
        ['ab.x', 'ab_z'],
        ['abc', 'abd'],
      ]);
      assert.deepEqual((await t.api.get(`${p}?prefix=zz`)).body.tables, []);
      expectProblem(await t.api.get(`${p}?prefix=${encodeURIComponent('a%')}`), 400, 13);
    });

    it('a missing namespace is 404 code 1', async () => {
      const t = await newTenant(gw);
      expectProblem(await t.api.get(`/v1/namespace/${idPath('missing')}/table/list`), 404, 1);
    });
  });

  describe('list all tables (GET /v1/table)', () => {
    it('lists full identifiers recursively, paginated, in the request delimiter', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'ns1');
      await createNs(t.api, 'ns1', 'child');
      await createNs(t.api, 'ns2');
      const ids: string[][] = [];
      for (let i = 0; i < 25; i++) {
        const ns = [[], ['ns1'], ['ns1', 'child'], ['ns2']][i % 4];
        ids.push([...ns, `t${String(i).padStart(2, '0')}`]);
      }
      for (const id of ids) await declare(t.api, ...id);

      const all = await t.api.get('/v1/table');
      expectOk(all);
      assert.deepEqual(sorted(all.body.tables), sorted(ids.map((id) => id.join('$'))));
      assert.equal(all.body.page_token ?? undefined, undefined);

      const pages = await allPages(t.api, '/v1/table', 7);
      assert.deepEqual(
        pages.map((p) => p.length),
        [7, 7, 7, 4],
      );
      const flat = pages.flat();
      assert.equal(new Set(flat).size, 25, 'no table listed twice');
      assert.deepEqual(sorted(flat), sorted(ids.map((id) => id.join('$'))));

      const dotted = await allPages(t.api, '/v1/table?delimiter=.', 7);
      assert.deepEqual(sorted(dotted.flat()), sorted(ids.map((id) => id.join('.'))));
      assert.ok(dotted.flat().includes('ns1.child.t02'));
    });

    it('limit=0 returns an empty page', async () => {
      const t = await newTenant(gw);
      await declare(t.api, 'a');
      const r = await t.api.get('/v1/table?limit=0');
      expectOk(r);
      assert.deepEqual(r.body.tables, []);
    });

    it('include_declared=false lists only tables with data, across namespaces', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'n');
      const a = await declare(t.api, 'a');
      await declare(t.api, 'b');
      const c = await declare(t.api, 'n', 'c');
      await declare(t.api, 'n', 'd');
      await writeTable(a, rows(0, 1));
      await writeTable(c, rows(0, 1));
      const r = await t.api.get('/v1/table?include_declared=false');
      expectOk(r);
      assert.deepEqual(sorted(r.body.tables), ['a', 'n$c']);
      const paged = await allPages(t.api, '/v1/table?include_declared=false', 1);
      assert.deepEqual(sorted(paged.flat()), ['a', 'n$c']);
      const everything = await t.api.get('/v1/table?include_declared=true');
      assert.deepEqual(sorted(everything.body.tables), ['a', 'b', 'n$c', 'n$d']);
    });

    it('an invalid page_token is 400 code 13', async () => {
      const t = await newTenant(gw);
      await declare(t.api, 'a');
      expectProblem(await t.api.get('/v1/table?page_token=not-a-token'), 400, 13);
      // A well-formed token of another list (a bare name) is not a list-all token either.
      const foreign = Buffer.from(JSON.stringify('a')).toString('base64url');
      expectProblem(await t.api.get(`/v1/table?page_token=${foreign}`), 400, 13);
      expectProblem(await t.api.get('/v1/table?limit=abc'), 400, 13);
      expectProblem(await t.api.get('/v1/table?include_declared=maybe'), 400, 13);
    });

    if (kind === 'postgres') {
      it('keyset pagination over 5000 tables walks the unique index without sorting', async () => {
        const t = await newTenant(gw);
        const client = new pg.Client({ connectionString: pgUrlFor(gw.pgDatabase as string) });
        await client.connect();
        try {
          const { rows: dbs } = await client.query<{ id: string }>('SELECT id FROM databases WHERE name = $1', [t.name]);
          assert.equal(dbs.length, 1);
          await client.query(
            `INSERT INTO tables (id, database_id, catalog, namespace_path, name, location)
             SELECT gen_random_uuid(), $1::uuid, '', '', 'k' || lpad(i::text, 5, '0'), $2 || '/' || gen_random_uuid() || '.lance'
               FROM generate_series(0, 4999) AS i`,
            [dbs[0].id, t.name],
          );
          await client.query('ANALYZE tables');

          // A token from the middle of the listing, as a client gets it.
          const first = await t.api.get('/v1/table?limit=2500');
          expectOk(first);
          assert.equal(first.body.tables.length, 2500);
          assert.equal(first.body.tables[2499], 'k02499');
          const token = first.body.page_token as string;
          assert.equal(typeof token, 'string');

          // Capture the SQL the repository issues for the page after that token.
          // Outside a unit of work hot reads go straight to the driver (CatalogDb.read).
          const catalog = gw.app.get(CATALOG_DB) as CatalogDb;
          const original = catalog.read;
          const captured: Array<{ text: string; values: readonly unknown[] }> = [];
          (catalog as { read: CatalogDb['read'] }).read = function <T>(sql: string, params: readonly unknown[]) {
            captured.push({ text: sql, values: params });
            return original.call(catalog, sql, params) as Promise<T[]>;
          };
          let next: Reply;
          try {
            next = await t.api.get(`/v1/table?limit=5&page_token=${encodeURIComponent(token)}`);
          } finally {
            (catalog as { read: CatalogDb['read'] }).read = original;
          }
          expectOk(next);
          assert.deepEqual(next.body.tables, ['k02500', 'k02501', 'k02502', 'k02503', 'k02504']);
          assert.equal(typeof next.body.page_token, 'string');

          const page = captured.find((s) => /ORDER BY\s+namespace_path,\s*name/i.test(s.text));
          assert.ok(page, `no keyset page query captured: ${captured.map((s) => s.text).join(' | ')}`);
          const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${page.text}`, page.values as unknown[])).rows
            .map((r) => r['QUERY PLAN'])
            .join('\n');
          assert.match(plan, /tables_database_id_catalog_namespace_path_name_key/, plan);
          assert.doesNotMatch(plan, /Sort/, plan);

          // And the whole listing still comes out exactly once across pages.
          const pages = await allPages(t.api, '/v1/table', 1000);
          const flat = pages.flat();
          assert.equal(flat.length, 5000);
          assert.equal(new Set(flat).size, 5000);
          assert.equal(pages.length, 5);
        } finally {
          await client.end();
        }
      });
    }
  });

  describe('rename', () => {
    it('renames within a namespace; location and data stay put', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'ns');
      const loc = await declare(t.api, 'ns', 'old');
      await writeTable(loc, rows(0, 3));
      const r = await t.api.post(`/v1/table/${idPath('ns', 'old')}/rename`, { new_table_name: 'new' });
      expectOk(r);
      assert.deepEqual(r.body, {});
      expectProblem(await t.api.post(`/v1/table/${idPath('ns', 'old')}/exists`, {}), 404, 4);
      const d = await t.api.post(`/v1/table/${idPath('ns', 'new')}/describe`, {});
      expectOk(d);
      assert.equal(d.body.location, loc);
      assert.equal(d.body.table, 'new');
      assert.equal(await countRows(d.body.location), 3);
      assert.deepEqual((await t.api.get(`/v1/namespace/${idPath('ns')}/table/list`)).body.tables, ['new']);
    });

    it('moves a table into another namespace (and to the root)', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'src');
      await createNs(t.api, 'dst');
      const loc = await declare(t.api, 'src', 'm');
      await writeTable(loc, rows(0, 4));
      expectOk(await t.api.post(`/v1/table/${idPath('src', 'm')}/rename`, { new_table_name: 'moved', new_namespace_id: ['dst'] }));
      assert.deepEqual((await t.api.get(`/v1/namespace/${idPath('src')}/table/list`)).body.tables, []);
      assert.deepEqual((await t.api.get(`/v1/namespace/${idPath('dst')}/table/list`)).body.tables, ['moved']);
      const d = await t.api.post(`/v1/table/${idPath('dst', 'moved')}/describe`, {});
      assert.equal(d.body.location, loc);
      assert.deepEqual(d.body.namespace, ['dst']);
      assert.equal(await countRows(d.body.location), 4);

      expectOk(await t.api.post(`/v1/table/${idPath('dst', 'moved')}/rename`, { new_table_name: 'atroot', new_namespace_id: [] }));
      const root = await t.api.post(`/v1/table/${idPath('atroot')}/describe`, {});
      expectOk(root);
      assert.equal(root.body.location, loc);
      assert.deepEqual((await t.api.get('/v1/table')).body.tables, ['atroot']);
    });

    it('an existing destination is 409 code 5 and nothing changes', async () => {
      const t = await newTenant(gw);
      const a = await declare(t.api, 'a');
      const b = await declare(t.api, 'b');
      expectProblem(await t.api.post(`/v1/table/${idPath('a')}/rename`, { new_table_name: 'b' }), 409, 5);
      assert.equal((await t.api.post(`/v1/table/${idPath('a')}/describe`, {})).body.location, a);
      assert.equal((await t.api.post(`/v1/table/${idPath('b')}/describe`, {})).body.location, b);
    });

    it('a missing target namespace is 404 code 1', async () => {
      const t = await newTenant(gw);
      await declare(t.api, 'a');
      expectProblem(await t.api.post(`/v1/table/${idPath('a')}/rename`, { new_table_name: 'a', new_namespace_id: ['nowhere'] }), 404, 1);
      expectOk(await t.api.post(`/v1/table/${idPath('a')}/exists`, {}));
    });

    it('an invalid new name is 400 code 13', async () => {
      const t = await newTenant(gw);
      await declare(t.api, 'a');
      for (const bad of ['', 'has space', 'sl/ash', 'd$llar']) {
        expectProblem(await t.api.post(`/v1/table/${idPath('a')}/rename`, { new_table_name: bad }), 400, 13);
      }
      expectProblem(await t.api.post(`/v1/table/${idPath('a')}/rename`, {}), 400, 13);
      expectOk(await t.api.post(`/v1/table/${idPath('a')}/exists`, {}));
    });

    it('a missing source is 404 code 4', async () => {
      const t = await newTenant(gw);
      expectProblem(await t.api.post(`/v1/table/${idPath('ghost')}/rename`, { new_table_name: 'x' }), 404, 4);
    });
  });

  describe('drop', () => {
    it('drops (no body), removes the folder, and a new declare gets a fresh empty location', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'ns');
      const loc = await declare(t.api, 'ns', 'gone');
      await writeTable(loc, rows(0, 3));
      const r = await t.api.request('POST', `/v1/table/${idPath('ns', 'gone')}/drop`);
      expectOk(r);
      assert.deepEqual(r.body.id, ['ns', 'gone']);
      assert.equal(r.body.location, loc);
      expectProblem(await t.api.post(`/v1/table/${idPath('ns', 'gone')}/exists`, {}), 404, 4);
      await eventually(async () => !(await stored.exists(loc)));

      const again = await declare(t.api, 'ns', 'gone');
      assert.notEqual(again, loc);
      await expectDeclaredOnly(again);
      const d = await t.api.post(`/v1/table/${idPath('ns', 'gone')}/describe?check_declared=true`, {});
      assert.equal(d.body.is_only_declared, true);
      const s = await t.api.post(`/v1/table/${idPath('ns', 'gone')}/stats`, {});
      expectOk(s);
      assert.equal(s.body.num_rows, 0);
    });

    it('accepts the JSON body the official client sends', async () => {
      const t = await newTenant(gw);
      const loc = await declare(t.api, 'd');
      // A declared table is an empty folder locally, but nothing on an object store: write some data there, so
      // the drop has objects to remove.
      if (TEST_STORAGE === 's3') await writeTable(loc, rows(0, 1));
      assert.ok(await stored.exists(loc));
      const r = await t.api.post(`/v1/table/${idPath('d')}/drop`, { id: ['d'] });
      expectOk(r);
      assert.equal(r.body.location, loc);
      await eventually(async () => !(await stored.exists(loc)));
    });

    it('a missing table is 404 code 4; a missing namespace 404 code 1', async () => {
      const t = await newTenant(gw);
      expectProblem(await t.api.post(`/v1/table/${idPath('none')}/drop`, {}), 404, 4);
      expectProblem(await t.api.post(`/v1/table/${idPath('nons', 'none')}/drop`, {}), 404, 1);
    });
  });

  describe('deregister and register', () => {
    it('deregister keeps the data, which can be registered again', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'ns');
      const loc = await declare(t.api, 'ns', 'keep');
      await writeTable(loc, rows(0, 3));
      const r = await t.api.post(`/v1/table/${idPath('ns', 'keep')}/deregister`, {});
      expectOk(r);
      assert.deepEqual(r.body.id, ['ns', 'keep']);
      assert.equal(r.body.location, loc);
      expectProblem(await t.api.post(`/v1/table/${idPath('ns', 'keep')}/exists`, {}), 404, 4);
      assert.ok(await hasVersions(loc), 'data still on storage');

      const rel = stored.relative(dbFolder(t), loc);
      assert.ok(!rel.startsWith('..'));
      const reg = await t.api.post(`/v1/table/${idPath('ns', 'back')}/register`, { location: rel });
      expectOk(reg);
      assert.equal(reg.body.location, rel, 'register answers the location as given (as the reference does)');
      const d = await t.api.post(`/v1/table/${idPath('ns', 'back')}/describe?check_declared=true`, {});
      assert.equal(d.body.location, loc);
      assert.equal(d.body.is_only_declared, false);
      const s = await t.api.post(`/v1/table/${idPath('ns', 'back')}/stats`, {});
      assert.equal(s.body.num_rows, 3);
      assert.ok(await stored.exists(loc));
    });

    it('deregister of a missing table is 404 code 4', async () => {
      const t = await newTenant(gw);
      expectProblem(await t.api.post(`/v1/table/${idPath('none')}/deregister`, {}), 404, 4);
    });

    it('registers Lance data at a location relative to the database folder', async () => {
      const t = await newTenant(gw);
      const abs = stored.join(dbFolder(t), 'imports', 'x.lance');
      await writeTable(abs, rows(0, 2));
      const r = await t.api.post(`/v1/table/${idPath('imp')}/register`, { location: 'imports/x.lance', properties: { src: 'x' } });
      expectOk(r);
      assert.equal(r.body.location, 'imports/x.lance', 'the location as given');
      const d = await t.api.post(`/v1/table/${idPath('imp')}/describe`, {});
      expectOk(d);
      assert.equal(d.body.location, abs);
      assert.deepEqual(d.body.properties, { src: 'x' });
      assert.deepEqual((await t.api.get('/v1/table?include_declared=false')).body.tables, ['imp']);
      const s = await t.api.get(`/v1/table/${idPath('imp')}/stats`);
      assert.equal(s.body.num_rows, 2);
    });

    it('rejects locations outside the database folder or without a Lance table (400 code 13)', async () => {
      const t = await newTenant(gw);
      const other = await newTenant(gw);
      await writeTable(stored.join(dbFolder(other), 'x.lance'), rows(0, 1));
      await writeTable(stored.join(dbFolder(t), 'ok.lance'), rows(0, 1));
      const reg = (location: string) => t.api.post(`/v1/table/${idPath('r')}/register`, { location });

      expectProblem(await reg(`../${other.name}/x.lance`), 400, 13, { msg: 'Path traversal' });
      expectProblem(await reg('sub/../../x.lance'), 400, 13, { msg: 'Path traversal' });
      // Another database's table by its full location: an absolute path locally, an s3:// URI on the object store.
      expectProblem(await reg(stored.join(dbFolder(other), 'x.lance')), 400, 13, {
        msg: TEST_STORAGE === 's3' ? 'Absolute URIs' : 'Absolute paths',
      });
      expectProblem(await reg('/abs/x.lance'), 400, 13, { msg: 'Absolute paths' });
      expectProblem(await reg('s3://b/x.lance'), 400, 13, { msg: 'Absolute URIs' });
      expectProblem(await reg('file:///tmp/x.lance'), 400, 13, { msg: 'Absolute URIs' });
      await stored.makeNonTableFolder(stored.join(dbFolder(t), 'empty.lance'));
      expectProblem(await reg('empty.lance'), 400, 13);
      expectProblem(await reg('missing.lance'), 400, 13);
      expectProblem(await reg('.'), 400, 13);
      expectProblem(await t.api.post(`/v1/table/${idPath('r')}/register`, {}), 400, 13);
      expectProblem(await t.api.post(`/v1/table/${idPath('r')}/exists`, {}), 404, 4);
      // The same data through a valid relative path is fine.
      expectOk(await reg('ok.lance'));
    });

    it('registering in a missing namespace is 404 code 1', async () => {
      const t = await newTenant(gw);
      await writeTable(stored.join(dbFolder(t), 'y.lance'), rows(0, 1));
      expectProblem(await t.api.post(`/v1/table/${idPath('nons', 'r')}/register`, { location: 'y.lance' }), 404, 1);
    });

    it('an existing name is 409 code 5; mode overwrite replaces the entry', async () => {
      const t = await newTenant(gw);
      const x = stored.join(dbFolder(t), 'imports', 'x.lance');
      const y = stored.join(dbFolder(t), 'imports', 'y.lance');
      await writeTable(x, rows(0, 2));
      await writeTable(y, rows(0, 5));
      expectOk(await t.api.post(`/v1/table/${idPath('r')}/register`, { location: 'imports/x.lance' }));
      expectProblem(await t.api.post(`/v1/table/${idPath('r')}/register`, { location: 'imports/y.lance' }), 409, 5);
      expectProblem(await t.api.post(`/v1/table/${idPath('r')}/register`, { location: 'imports/y.lance', mode: 'Create' }), 409, 5);
      assert.equal((await t.api.post(`/v1/table/${idPath('r')}/describe`, {})).body.location, x);

      const r = await t.api.post(`/v1/table/${idPath('r')}/register`, { location: 'imports/y.lance', mode: 'overwrite' });
      expectOk(r);
      assert.equal(r.body.location, 'imports/y.lance');
      assert.equal((await t.api.post(`/v1/table/${idPath('r')}/describe`, {})).body.location, y);
      assert.equal((await t.api.post(`/v1/table/${idPath('r')}/stats`, {})).body.num_rows, 5);
      assert.ok(await hasVersions(x), 'the replaced entry’s data stays');
      expectProblem(await t.api.post(`/v1/table/${idPath('r')}/register`, { location: 'imports/x.lance', mode: 'bogus' }), 400, 13);
    });

    it('one folder backs one table: registering a location already in use is 409 and drop cannot delete shared data', async () => {
      const t = await newTenant(gw);
      const shared = stored.join(dbFolder(t), 'shared.lance');
      await writeTable(shared, rows(0, 3));
      expectOk(await t.api.post(`/v1/table/${idPath('a')}/register`, { location: 'shared.lance' }));
      expectProblem(await t.api.post(`/v1/table/${idPath('b')}/register`, { location: 'shared.lance' }), 409, 14, { msg: 'already used' });
      expectProblem(await t.api.post(`/v1/table/${idPath('b')}/register`, { location: './shared.lance' }), 409, 14);
      expectProblem(await t.api.post(`/v1/table/${idPath('b')}/exists`, {}), 404, 4);
      // A declared table's folder cannot be registered under a second name either.
      const declared = await t.api.post(`/v1/table/${idPath('c')}/declare`, {});
      expectOk(declared);
      await writeTable(declared.body.location, rows(0, 1));
      const rel = stored.relative(dbFolder(t), declared.body.location);
      expectProblem(await t.api.post(`/v1/table/${idPath('d')}/register`, { location: rel }), 409, 14);
      // Re-registering the same name on its own location with overwrite is fine.
      expectOk(await t.api.post(`/v1/table/${idPath('a')}/register`, { location: 'shared.lance', mode: 'overwrite' }));
      assert.equal((await t.api.post(`/v1/table/${idPath('a')}/stats`, {})).body.num_rows, 3);
    });

    it('a read key cannot register or deregister (403 code 15)', async () => {
      const t = await newTenant(gw);
      await writeTable(stored.join(dbFolder(t), 'z.lance'), rows(0, 1));
      expectProblem(await t.reader.post(`/v1/table/${idPath('z')}/register`, { location: 'z.lance' }), 403, 15);
      await declare(t.api, 'w');
      expectProblem(await t.reader.post(`/v1/table/${idPath('w')}/deregister`, {}), 403, 15);
      expectProblem(await t.reader.post(`/v1/table/${idPath('w')}/rename`, { new_table_name: 'v' }), 403, 15);
    });
  });

  describe('stats', () => {
    const zero = {
      total_bytes: 0,
      num_rows: 0,
      num_indices: 0,
      fragment_stats: { num_fragments: 0, num_small_fragments: 0, lengths: { min: 0, max: 0, mean: 0, p25: 0, p50: 0, p75: 0, p99: 0 } },
    };

    it('a declared-only table has all-zero statistics (POST and GET)', async () => {
      const t = await newTenant(gw);
      await declare(t.api, 's');
      const p = await t.api.post(`/v1/table/${idPath('s')}/stats`, {});
      expectOk(p);
      assert.deepEqual(p.body, zero);
      const g = await t.api.get(`/v1/table/${idPath('s')}/stats`);
      expectOk(g);
      assert.deepEqual(g.body, zero);
    });

    it('counts rows, fragments and bytes of written data; a branch has its own numbers', async () => {
      const t = await newTenant(gw);
      await createNs(t.api, 'ns');
      const loc = await declare(t.api, 'ns', 's');
      await writeTable(loc, rows(0, 3));
      await appendRows(loc, rows(3, 2));
      const p = `/v1/table/${idPath('ns', 's')}/stats`;

      for (const r of [await t.api.post(p, {}), await t.api.get(p)]) {
        expectOk(r);
        const s = r.body;
        assert.equal(s.num_rows, 5);
        assert.equal(s.num_indices, 0);
        assert.ok(Number.isInteger(s.total_bytes) && s.total_bytes > 0, `total_bytes ${s.total_bytes}`);
        assert.equal(s.fragment_stats.num_fragments, 2);
        assert.equal(s.fragment_stats.num_small_fragments, 2);
        const l = s.fragment_stats.lengths;
        assert.equal(l.min, 2);
        assert.equal(l.max, 3);
        for (const k of ['min', 'max', 'mean', 'p25', 'p50', 'p75', 'p99']) {
          assert.ok(Number.isInteger(l[k]), `lengths.${k} = ${l[k]}`);
          assert.ok(l[k] >= 2 && l[k] <= 3, `lengths.${k} = ${l[k]}`);
        }
      }

      await branchAndAdd(loc, 'dev', rows(100, 4));
      const dev = await t.api.post(p, { branch: 'dev' });
      expectOk(dev);
      assert.equal(dev.body.num_rows, 9);
      assert.equal(dev.body.fragment_stats.num_fragments, 3);
      const devGet = await t.api.get(`${p}?branch=dev`);
      expectOk(devGet);
      assert.equal(devGet.body.num_rows, 9);
      const main = await t.api.post(p, {});
      assert.equal(main.body.num_rows, 5, 'main is unaffected by the branch');

      const unknown = await t.api.post(p, { branch: 'nope' });
      expectProblem(unknown, 404, 22); // TABLE_BRANCH_NOT_FOUND
      expectProblem(await t.api.get(`${p}?branch=nope`), 404, 22);
    });

    it('a missing table is 404 code 4; a missing namespace 404 code 1', async () => {
      const t = await newTenant(gw);
      expectProblem(await t.api.post(`/v1/table/${idPath('none')}/stats`, {}), 404, 4);
      expectProblem(await t.api.get(`/v1/table/${idPath('nons', 'none')}/stats`), 404, 1);
    });
  });

  describe('tenant isolation', () => {
    it("one database's tables are invisible to another; names may repeat", async () => {
      const x = await newTenant(gw);
      const y = await newTenant(gw);
      const onlyX = await declare(x.api, 'onlyx');
      await writeTable(onlyX, rows(0, 7));
      const sx = await declare(x.api, 'shared');
      expectProblem(await y.api.post(`/v1/table/${idPath('onlyx')}/describe`, {}), 404, 4);
      expectProblem(await y.api.post(`/v1/table/${idPath('onlyx')}/exists`, {}), 404, 4);
      expectProblem(await y.api.post(`/v1/table/${idPath('onlyx')}/drop`, {}), 404, 4);
      expectProblem(await y.api.post(`/v1/table/${idPath('onlyx')}/stats`, {}), 404, 4);
      assert.deepEqual((await y.api.get('/v1/table')).body.tables, []);
      assert.deepEqual((await y.api.get(`/v1/namespace/${idPath()}/table/list`)).body.tables, []);

      const sy = await declare(y.api, 'shared');
      assert.notEqual(sx, sy);
      assert.ok(stored.isInside(sx, dbFolder(x)));
      assert.ok(stored.isInside(sy, dbFolder(y)));
      assert.deepEqual((await y.api.get('/v1/table')).body.tables, ['shared']);
      assert.deepEqual(sorted((await x.api.get('/v1/table')).body.tables), ['onlyx', 'shared']);

      // Y cannot register X's data through its own folder either.
      const rel = stored.relative(dbFolder(y), onlyX);
      expectProblem(await y.api.post(`/v1/table/${idPath('stolen')}/register`, { location: rel }), 400, 13);

      // Nor reach X's data through a branch name that walks out of its own table folder.
      const mine = await declare(y.api, 'mine');
      await writeTable(mine, rows(0, 1));
      for (const branch of [stored.relative(stored.join(mine, 'tree'), onlyX), onlyX]) {
        const s = await y.api.post(`/v1/table/${idPath('mine')}/stats`, { branch });
        assert.ok(s.status >= 400 && s.status < 500, `branch ${branch}: ${s.status} ${s.text}`);
        assert.equal(s.body.num_rows, undefined);
      }

      // X's write key aimed at Y's database.
      const crossed = new Api(gw.url, { 'x-api-key': x.writeKey, 'x-service-database': y.name });
      expectProblem(await crossed.post(`/v1/table/${idPath('evil')}/declare`, {}), 403, 15);
      expectProblem(await crossed.post(`/v1/table/${idPath('shared')}/describe`, {}), 403, 15);
      expectProblem(await crossed.get('/v1/table'), 403, 15);
      expectProblem(await y.api.post(`/v1/table/${idPath('evil')}/exists`, {}), 404, 4);
      // Dropping X's table leaves Y's table of the same name alone.
      // (With data in both: on an object store a declared-only table has nothing that could be removed or kept.)
      await writeTable(sx, rows(0, 1));
      await writeTable(sy, rows(0, 1));
      expectOk(await x.api.post(`/v1/table/${idPath('shared')}/drop`, {}));
      expectOk(await y.api.post(`/v1/table/${idPath('shared')}/exists`, {}));
      await eventually(async () => !(await stored.exists(sx)));
      assert.ok(await stored.exists(sy));
      assert.ok(await hasVersions(sy));
    });
  });
});
