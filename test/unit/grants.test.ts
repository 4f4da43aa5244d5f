import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { keyRanges } from '../../src/modules/catalog/tables/tables.repository';
import { Access, Grant, grantsProblem, GrantsSchema } from '../../src/modules/identity/auth/grants';

const ns = (...path: string[]): Grant['on'] => ({ namespace: path });
const table = (...path: string[]): Grant['on'] => ({ table: path });

describe('grants: what a credential may do where (docs/access-control.md)', () => {
  test('without grants, a role holds its privileges on every object, and nothing is filtered', () => {
    const read = Access.of('read');
    assert.equal(read.unscoped, true);
    assert.ok(read.may('select', 'table', ['any', 't']));
    assert.ok(!read.may('insert', 'table', ['any', 't']));
    assert.ok(read.onDatabaseHas('describe') && !read.onDatabaseHas('admin'));
    assert.equal(read.tableFilter(), null);
    assert.equal(read.tablesIn(['x']), null);
    assert.equal(read.childNamespaces([]), null);
    assert.ok(Access.of('admin').onDatabaseHas('admin'));
    assert.ok(!Access.of('write').onDatabaseHas('admin'));
  });

  test('a namespace grant reaches the namespace and everything below it, nothing beside or above it', () => {
    const a = Access.of('read', [{ privileges: ['select'], on: ns('prod', 'catalog') }]);
    assert.equal(a.unscoped, false);
    assert.ok(a.may('select', 'table', ['prod', 'catalog', 't']));
    assert.ok(a.may('select', 'table', ['prod', 'catalog', 'deep', 't']));
    assert.ok(a.may('describe', 'table', ['prod', 'catalog', 't']), 'every privilege implies describe');
    assert.ok(!a.may('select', 'table', ['prod', 'other']));
    assert.ok(!a.may('select', 'table', ['prod', 'catalogue', 't']), 'a prefix of a name is not the name');
    assert.ok(!a.may('select', 'table', ['prod', 'catalog']), 'a table named like the namespace is not below it');
    // The way there is visible (describe, list) but holds nothing else.
    assert.ok(a.visible('namespace', ['prod']) && a.visible('namespace', []));
    assert.ok(a.may('describe', 'namespace', ['prod']));
    assert.ok(!a.may('select', 'namespace', ['prod']));
    assert.ok(!a.visible('namespace', ['staging']));
    assert.ok(!a.onDatabaseHas('describe'));
  });

  test('a table grant reaches that table only', () => {
    const a = Access.of('write', [{ privileges: ['insert'], on: table('raw', 'events') }]);
    assert.ok(a.may('insert', 'table', ['raw', 'events']));
    assert.ok(a.may('describe', 'table', ['raw', 'events']));
    assert.ok(!a.may('select', 'table', ['raw', 'events']));
    assert.ok(!a.may('insert', 'table', ['raw', 'events2']));
    assert.ok(!a.may('insert', 'namespace', ['raw', 'events']), 'not a namespace of the same name');
    assert.ok(!a.visible('table', ['raw', 'other']));
    assert.ok(a.visible('namespace', ['raw']));
    assert.ok(a.writesTable(['raw', 'events']) && !a.writesTable(['raw', 'other']));
  });

  test('the role is the ceiling: a grant never holds more than the role', () => {
    assert.match(grantsProblem('read', [{ privileges: ['insert'], on: ns() }]) ?? '', /cannot be granted 'insert'/);
    assert.match(grantsProblem('admin', [{ privileges: ['admin'], on: ns('a') }]) ?? '', /database only/);
    assert.equal(grantsProblem('write', [{ privileges: ['insert', 'select'], on: table('a', 'b') }]), null);
    // A token's claim may ask for more than its scope: the excess is not held.
    const a = Access.of('read', [{ privileges: ['select', 'insert'], on: { database: true } }]);
    assert.ok(a.may('select', 'table', ['x']));
    assert.ok(!a.may('insert', 'table', ['x']));
  });

  test('refusals: 403 for what the caller sees, the answer of a missing object for what it does not', () => {
    const a = Access.of('write', [
      { privileges: ['describe'], on: table('raw', 'events') },
      { privileges: ['select'], on: ns('prod') },
    ]);
    const seen = a.refusal('insert', 'table', ['raw', 'events']);
    assert.deepEqual([seen.status, seen.code], [403, 15]);
    const hidden = a.refusal('select', 'table', ['raw', 'secret']);
    assert.deepEqual([hidden.status, hidden.code, hidden.message], [404, 4, 'raw$secret']);
    const hiddenNs = a.refusal('select', 'table', ['hr', 'salaries']);
    assert.deepEqual([hiddenNs.status, hiddenNs.code, hiddenNs.message], [404, 1, 'hr']);
    const ns404 = a.refusal('describe', 'namespace', ['hr', 'x']);
    assert.deepEqual([ns404.status, ns404.code, ns404.message], [404, 1, 'hr$x']);
    // Creating: where the namespace is visible, 403; where it is not, the missing parent's answer.
    assert.equal(a.refusal('create', 'table', ['prod', 'new'], true).status, 403);
    const noParent = a.refusal('create', 'namespace', ['hr', 'x'], true);
    assert.deepEqual([noParent.status, noParent.code, noParent.message], [404, 1, "parent namespace 'hr'"]);
  });

  test('listings: children and tables on the way to the grants, or all of them under a granted namespace', () => {
    const a = Access.of('read', [
      { privileges: ['select'], on: ns('prod', 'catalog') },
      { privileges: ['select'], on: table('raw', 'events') },
      { privileges: ['select'], on: table('top') },
    ]);
    assert.deepEqual(a.childNamespaces([])?.sort(), ['prod', 'raw']);
    assert.deepEqual(a.childNamespaces(['prod']), ['catalog']);
    assert.equal(a.childNamespaces(['prod', 'catalog']), null);
    assert.deepEqual(a.childNamespaces(['staging']), []);
    assert.deepEqual(a.tablesIn([]), ['top']);
    assert.deepEqual(a.tablesIn(['raw']), ['events']);
    assert.equal(a.tablesIn(['prod', 'catalog', 'deep']), null);
    assert.deepEqual(a.tableFilter(), {
      namespaces: [['prod', 'catalog']],
      tables: [
        { namespace: ['raw'], name: 'events' },
        { namespace: [], name: 'top' },
      ],
    });
    // A grant on the root namespace or the database shows every table.
    assert.equal(Access.of('read', [{ privileges: ['describe'], on: ns() }]).tableFilter(), null);
    assert.equal(Access.of('read', [{ privileges: ['describe'], on: { database: true } }]).tableFilter(), null);
  });

  test('the grants schema refuses what the model cannot mean', () => {
    const bad: unknown[] = [
      [],
      [{ privileges: [], on: { database: true } }],
      [{ privileges: ['select'], on: { database: false } }],
      [{ privileges: ['select'], on: { table: [] } }],
      [{ privileges: ['select'], on: { namespace: ['a b'] } }],
      [{ privileges: ['drop'], on: { namespace: ['a'] } }],
      [{ privileges: ['select'], on: { namespace: ['a'], table: ['b'] } }],
      [{ privileges: ['select'], on: { namespace: ['a'] }, extra: 1 }],
      Array.from({ length: 101 }, () => ({ privileges: ['select'], on: { database: true } })),
    ];
    for (const g of bad) assert.equal(GrantsSchema.safeParse(g).success, false, JSON.stringify(g).slice(0, 120));
    assert.equal(GrantsSchema.safeParse([{ privileges: ['select', 'describe'], on: { namespace: [] } }]).success, true);
  });
});

describe('keyRanges: the index ranges a scoped listing reads', () => {
  const SEP = '\u001f';
  test('a namespace is itself and every path below it, not its look-alikes; points and overlaps merge; the start cuts', () => {
    const ranges = keyRanges(
      {
        namespaces: ['a', `a${SEP}b`, 'c'],
        tables: [
          { namespacePath: 'b', name: 't' },
          { namespacePath: `a${SEP}x`, name: 'y' },
        ],
      },
      ['', ''],
    );
    assert.deepEqual(ranges, [
      [
        ['a', ''],
        ['a ', ''],
      ],
      [
        ['b', 't'],
        ['b', 't\u0001'],
      ],
      [
        ['c', ''],
        ['c ', ''],
      ],
    ]);
    const inRange = (k: [string, string]) =>
      ranges.some(([f, t]) => (f[0] < k[0] || (f[0] === k[0] && f[1] <= k[1])) && (k[0] < t[0] || (k[0] === t[0] && k[1] < t[1])));
    assert.ok(inRange(['a', 'x']) && inRange([`a${SEP}b${SEP}c`, 'x']) && inRange(['b', 't']));
    assert.ok(!inRange(['a0', 'x']) && !inRange(['a.b', 'x']) && !inRange(['b', 't0']) && !inRange(['b', 's']));
    // After ('a', 'm'): the rest of a, then b's table and c.
    const later = keyRanges({ namespaces: ['a', 'c'], tables: [{ namespacePath: 'b', name: 't' }] }, ['a', 'm\u0001']);
    assert.deepEqual(later[0], [
      ['a', 'm\u0001'],
      ['a ', ''],
    ]);
    assert.equal(later.length, 3);
    assert.equal(keyRanges({ namespaces: ['a'], tables: [] }, ['b', '']).length, 0);
  });
});
