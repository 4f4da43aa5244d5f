import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { envSchema } from '../src/platform/config/config';
import { ROOT } from './helpers/root';
import { jemallocInstalled, runStartScript } from './helpers/start-script';

/**
 * Static checks of the deployment files, which cannot run here (no Docker engine): they must parse, use only
 * configuration the gateway knows, and start the gateway the way the README says.
 */
const read = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8');
const KNOWN = new Set(Object.keys(envSchema.shape));

describe('deployment files', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as {
    services: Record<string, { build?: unknown; image?: string; environment?: Record<string, string>; ports?: string[] }>;
  };
  // The gateway replicas are built from this repository's Dockerfile (PgBouncer from deploy/pgbouncer).
  const gateways = Object.entries(compose.services).filter(([, s]) => s.build === '.');

  it('docker-compose.yml runs Postgres, Redis, MinIO and two gateway replicas on one bucket behind one port', () => {
    assert.match(compose.services.postgres.image ?? '', /^postgres:/);
    assert.match(compose.services.redis.image ?? '', /^redis:/);
    assert.match(compose.services.minio.image ?? '', /^minio\/minio/);
    assert.match(
      JSON.stringify(compose.services['minio-setup']),
      /mc mb --ignore-existing local\/lance-tables/,
      'the bucket is made at start',
    );
    assert.equal(gateways.length, 2);
    const published = Object.values(compose.services).flatMap((s) => s.ports ?? []);
    assert.deepEqual(published.sort(), ['2333:2333', '9000:9000'], 'the load balancer, and the object store for namespace-mode clients');
    for (const [, g] of gateways) {
      assert.equal(g.environment?.STORAGE_ROOT, 's3://lance-tables/gateway', 'both replicas use the bucket');
      const options = JSON.parse((g.environment?.STORAGE_OPTIONS ?? '').replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1'));
      assert.equal(options.aws_endpoint, 'http://minio:9000');
    }
    for (const [, g] of gateways) assert.equal(g.ports, undefined, 'replicas are reached through the load balancer');
    const nginx = read('deploy/nginx.conf');
    for (const [name] of gateways) assert.match(nginx, new RegExp(`server ${name}:2333`));
  });

  it('sets only environment variables that the configuration schema knows', () => {
    for (const [name, g] of gateways) {
      const env = g.environment ?? {};
      assert.ok(Object.keys(env).length > 0, `${name} has an environment`);
      for (const key of Object.keys(env)) assert.ok(KNOWN.has(key), `${name}: ${key} is not a gateway setting`);
      // The catalog through PgBouncer, migrations on Postgres itself: the same user and database.
      assert.match(env.DATABASE_URL, /^postgresql:\/\/.+@pgbouncer:6432\//);
      assert.match(env.DATABASE_DIRECT_URL, /^postgresql:\/\/.+@postgres:5432\//);
      assert.equal(env.DATABASE_URL.replace('@pgbouncer:6432/', '@postgres:5432/'), env.DATABASE_DIRECT_URL);
      assert.equal(env.DB_POOLER, 'transaction');
      assert.match(env.REDIS_URL, /^redis:\/\/redis:6379/);
    }
  });

  it("PgBouncer: Debian's package, in transaction mode, forwarding the replicas' catalog database to Postgres", () => {
    const service = compose.services.pgbouncer as { build?: unknown; volumes?: string[] };
    assert.equal(service.build, 'deploy/pgbouncer');
    assert.match(read('deploy/pgbouncer/Dockerfile'), /apt-get install[^\n]*pgbouncer/);
    assert.match(read('deploy/pgbouncer/Dockerfile'), /^USER postgres$/m, 'not as root');
    assert.deepEqual(service.volumes, [
      './deploy/pgbouncer/pgbouncer.ini:/etc/pgbouncer/pgbouncer.ini:ro',
      './deploy/pgbouncer/userlist.txt:/etc/pgbouncer/userlist.txt:ro',
    ]);
    const ini = read('deploy/pgbouncer/pgbouncer.ini');
    const setting = (name: string) => new RegExp(`^${name}\\s*=\\s*(.*)$`, 'm').exec(ini)?.[1].trim();
    assert.equal(setting('pool_mode'), 'transaction');
    assert.equal(setting('listen_port'), '6432');
    const url = new URL(gateways[0][1].environment!.DATABASE_URL);
    const db = url.pathname.slice(1);
    assert.match(setting(db) ?? '', /host=postgres port=5432/, `[databases] forwards ${db} to Postgres`);
    assert.ok(read('deploy/pgbouncer/userlist.txt').includes(`"${url.username}" "${url.password}"`), 'the replicas can sign in');
    // Enough client connections for every replica's pool, and a server pool no larger than Postgres allows.
    assert.ok(Number(setting('max_client_conn')) >= gateways.length * 10 * 2);
    assert.ok(Number(setting('default_pool_size')) <= 90);
  });

  it('the Dockerfile is multi-stage, non-root, health-checked on /readyz, and starts the way the README says', () => {
    const dockerfile = read('Dockerfile');
    assert.ok((dockerfile.match(/^FROM /gm) ?? []).length >= 2, 'multi-stage');
    const user = [...dockerfile.matchAll(/^USER (\S+)/gm)].map((m) => m[1]);
    assert.ok(user.length > 0 && user[user.length - 1] !== 'root', 'runs as a non-root user');
    assert.match(dockerfile, /^HEALTHCHECK [\s\S]*\/readyz/m);
    const cmd = /^CMD \[(.+)\]$/m.exec(dockerfile)?.[1];
    assert.ok(cmd, 'CMD in exec form');
    const command = (JSON.parse(`[${cmd}]`) as string[]).join(' ');
    assert.equal(command, 'sh scripts/start.sh dist/src/main.js', 'started through the allocator script (docs/production.md, "Memory")');
    assert.match(dockerfile, /apt-get install[^\n]*libjemalloc2/, 'the image has jemalloc for the start script to preload');
    assert.match(dockerfile, /^COPY .*scripts\/start\.sh/m, 'the image has the start script');
    const pkg = JSON.parse(read('package.json'));
    assert.equal(pkg.scripts['start:prod'], command, 'npm run start:prod is the same command');
    assert.equal(pkg.scripts.start, command, 'npm start runs it the same way (after its prestart build)');
    assert.ok(read('README.md').includes(command), 'the README shows the production start command');
  });

  it("the start script preloads jemalloc when the system has it, else sets glibc's settings, sets the size of V8's young generation and its sweeping, and keeps what the caller set", () => {
    const probe =
      "const fs=require('fs');console.log(JSON.stringify({jemalloc:fs.readFileSync('/proc/self/maps','utf8').includes('libjemalloc'),conf:process.env.MALLOC_CONF??null,arenas:process.env.MALLOC_ARENA_MAX??null,mmap:process.env.MALLOC_MMAP_THRESHOLD_??null,v8:process.execArgv.filter((a)=>a.startsWith('--max-semi')||a.startsWith('--no-concurrent')),pid:process.pid}))";
    const run = (env: Record<string, string>) => {
      const r = runStartScript(['-e', probe], env);
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(r.stdout.trim()) as {
        jemalloc: boolean;
        conf: string | null;
        arenas: string | null;
        mmap: string | null;
        v8: string[];
        pid: number;
      };
    };
    const glibc = run({ LGW_ALLOCATOR: 'glibc' });
    assert.deepEqual(
      { ...glibc, pid: 0 },
      { jemalloc: false, conf: null, arenas: '2', mmap: '1048576', v8: ['--max-semi-space-size=32', '--no-concurrent-sweeping'], pid: 0 },
    );
    assert.deepEqual(run({ LGW_NODE_FLAGS: '' }).v8, [], 'LGW_NODE_FLAGS replaces the node flags');
    assert.equal(run({ LGW_ALLOCATOR: 'glibc', MALLOC_ARENA_MAX: '4' }).arenas, '4', 'a setting made by the caller wins');
    const picked = run({});
    if (jemallocInstalled) {
      assert.equal(picked.jemalloc, true, 'jemalloc is loaded into node');
      assert.match(picked.conf ?? '', /background_thread:true/);
      assert.equal(picked.mmap, null, "glibc's settings are not needed then");
    } else {
      assert.deepEqual({ ...picked, pid: 0 }, { ...glibc, pid: 0 }, 'without jemalloc: the glibc settings');
    }
  });

  it('docs/configuration.md documents every configuration variable', () => {
    const reference = read('docs/configuration.md');
    for (const key of KNOWN) assert.ok(reference.includes(`\`${key}\``), `docs/configuration.md does not document ${key}`);
  });
});
