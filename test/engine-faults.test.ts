import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, it } from 'node:test';
import * as lancedb from '@lancedb/lancedb';
import { Api, forEachCatalog, newTenant, startGateway, Tenant, TestGateway } from './helpers/gateway';
import { expectProblem } from './helpers/assertions';
import { LogCapture } from './helpers/logs';

/**
 * The other side of the line: a failure the caller did not cause is a 500 (code 18), with the request id as
 * `instance`, logged once with the engine's error and stack, and no engine internals in the answer. In a file of its
 * own: the framework's error logger is bound to the first gateway a process starts, so that one must log here.
 */
const logs = new LogCapture();

forEachCatalog('what the caller did not cause stays a 500', (kind) => {
  let gw: TestGateway;
  let t: Tenant;

  before(async () => {
    gw = await startGateway(kind, {}, { logStream: logs });
    t = await newTenant(gw);
    const db = await lancedb.connect(`db://${t.name}`, { apiKey: t.writeKey, hostOverride: gw.url });
    (
      await db.createTable('items', [
        { id: 1, text: 'a' },
        { id: 2, text: 'b' },
      ])
    ).close();
    db.close();
  });
  after(() => gw.close());

  it('storage failing under the engine: 500 with the request id, its stack logged once', async () => {
    // The table's data files vanish behind the gateway's back (a broken volume, an operator's mistake).
    const location = (await t.api.post('/v1/table/items/describe', {})).body.location as string;
    const data = path.join(location, 'data');
    for (const f of fs.readdirSync(data)) fs.rmSync(path.join(data, f));
    const r = await t.api.post('/v1/table/items/query', { k: 10 }, { 'x-request-id': `vanished-${kind}` });
    expectProblem(r, 500, 18);
    assert.equal(r.body.instance, `vanished-${kind}`);
    assert.doesNotMatch(r.text, /LanceError|\.lance|tmp/, 'no engine internals in the answer');
    const logged = logs.records.filter((l) => String(l.msg).includes(`request vanished-${kind}:`));
    assert.equal(logged.length, 1, 'logged once');
    assert.match(logged[0].msg, /EngineFault: storage engine failure \(storage-failure\)/);
    assert.match(logged[0].msg, /caused by Error: .*LanceError\(IO\)/s, 'with the engine error and its stack');
    assert.equal((await new Api(gw.url).get('/healthz')).status, 200);
  });
});
