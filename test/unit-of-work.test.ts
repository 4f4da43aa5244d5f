import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { UnitOfWork } from '../src/platform/db/unit-of-work';
import { DatabasesRepository } from '../src/modules/identity/tenancy/databases.repository';
import { NamespacesRepository } from '../src/modules/catalog/namespaces/namespaces.repository';
import { TransactionsRepository } from '../src/modules/catalog/transactions/transactions.repository';
import { forEachCatalog, newTenant, startGateway, TestGateway } from './helpers/gateway';

/**
 * The unit of work (src/platform/db/unit-of-work.ts) on both catalogs: repositories join the unit open on their call
 * path without a handle being passed, a failure rolls back everything in it, nested units join the outer one, and
 * outside a unit each query stands alone.
 */
forEachCatalog('unit of work', (kind) => {
  let gw: TestGateway;
  let uow: UnitOfWork;
  let namespaces: NamespacesRepository;
  let transactions: TransactionsRepository;
  let scope: { databaseId: string; catalog: string };

  before(async () => {
    gw = await startGateway(kind);
    const t = await newTenant(gw);
    uow = gw.app.get(UnitOfWork);
    namespaces = gw.app.get(NamespacesRepository);
    transactions = gw.app.get(TransactionsRepository);
    const db = await gw.app.get(DatabasesRepository).findByName(t.name);
    scope = { databaseId: db!.id, catalog: '' };
  });
  after(() => gw?.close());

  const ns = (name: string) => ({ path: name, parentPath: '', name, properties: {} });

  it('commits every repository write of a unit together', async () => {
    const txId = randomUUID();
    await uow.run(async () => {
      assert.equal(uow.inProgress, true);
      await namespaces.insert(scope, ns('committed'));
      await transactions.insert({ id: txId, databaseId: scope.databaseId, operation: 'test', pending: [] });
      // Read inside the unit: sees its own write (one connection on the embedded catalog would deadlock otherwise).
      assert.ok(await namespaces.find(scope, 'committed'));
    });
    assert.ok(await namespaces.find(scope, 'committed'));
    assert.ok(await transactions.find(scope.databaseId, txId));
  });

  it('rolls back every write of a unit that fails, including those of nested units', async () => {
    const txId = randomUUID();
    await assert.rejects(
      uow.run(async () => {
        await namespaces.insert(scope, ns('rolled-back'));
        await uow.run(() => transactions.insert({ id: txId, databaseId: scope.databaseId, operation: 'test', pending: [] }));
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await namespaces.find(scope, 'rolled-back'), null);
    assert.equal(await transactions.find(scope.databaseId, txId), null);
  });

  it(
    'a unit that ends while another is open leaves the other its transaction',
    {
      skip: kind === 'embedded' && 'the embedded catalog has one connection: its units take turns and cannot overlap',
    },
    async () => {
      // Overlapping units: B must keep its transaction across awaits after A, opened and ended inside B's lifetime, is
      // over, and roll back whole.
      let aMayStart!: () => void;
      const started = new Promise<void>((r) => (aMayStart = r));
      let bMayEnd!: () => void;
      const ending = new Promise<void>((r) => (bMayEnd = r));
      const b = uow.run(async () => {
        await namespaces.insert(scope, ns('b-first'));
        aMayStart();
        await ending;
        assert.equal(uow.inProgress, true);
        await namespaces.insert(scope, ns('b-second'));
        throw new Error('b fails');
      });
      await started;
      await uow.run(async () => {
        await namespaces.insert(scope, ns('a-only'));
        assert.equal(uow.inProgress, true);
      });
      bMayEnd();
      await assert.rejects(b, /b fails/);
      assert.ok(await namespaces.find(scope, 'a-only'));
      assert.equal(await namespaces.find(scope, 'b-first'), null);
      assert.equal(await namespaces.find(scope, 'b-second'), null);
      assert.equal(uow.inProgress, false);
    },
  );

  it('outside a unit, each write stands alone', async () => {
    assert.equal(uow.inProgress, false);
    await namespaces.insert(scope, ns('alone'));
    assert.ok(await namespaces.find(scope, 'alone'));
  });
});
