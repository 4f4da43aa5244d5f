import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The layers of src/ (docs/architecture.md) and the rules between them, as data the import-graph test checks:
 * platform imports no engine and no feature; engine imports only platform; features import engine, platform and
 * each other without a cycle; the composition root (src/*.ts, src/cli, src/modules/lance-rest.module.ts) may
 * import anything. A unit is a folder: `platform/<part>`, `engine/<part>`, `modules/<feature>`. The sub-folders of
 * `modules/catalog` (namespaces, tables, versions, transactions, dropped) and `modules/data` (writes, reads, …) sort
 * one feature's files by route family; they share one repository layer and may import each other.
 */
export type Layer = 'root' | 'platform' | 'engine' | 'features' | 'generated';

const RANK: Record<Layer, number> = { generated: 0, platform: 1, engine: 2, features: 3, root: 4 };

export function unitOf(rel: string): { unit: string; layer: Layer } {
  const parts = rel.split('/');
  if (parts[0] === 'generated') return { unit: 'generated', layer: 'generated' };
  if (parts.length === 1 || parts[0] === 'cli' || rel === 'modules/lance-rest.module.ts') return { unit: 'root', layer: 'root' };
  if (parts[0] === 'platform' || parts[0] === 'engine') {
    return { unit: parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0], layer: parts[0] };
  }
  if (parts[0] === 'modules') {
    return { unit: parts.length > 2 ? `modules/${parts[1]}` : 'root', layer: parts.length > 2 ? 'features' : 'root' };
  }
  return { unit: parts[0], layer: 'root' };
}

export interface Edge {
  from: string; // file, relative to src/
  to: string;
}

/** The relative imports of every .ts file under `srcDir` (static, dynamic and re-exports), resolved to files. */
export function importsOf(srcDir: string): Edge[] {
  const edges: Edge[] = [];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (path.relative(srcDir, p) !== 'generated') walk(p);
      } else if (e.name.endsWith('.ts')) {
        const text = fs.readFileSync(p, 'utf8');
        for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\brequire\s*\(\s*|^import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm)) {
          const base = path.resolve(path.dirname(p), m[1]).replace(/\.js$/, '');
          const target = [`${base}.ts`, path.join(base, 'index.ts'), `${base}.js`, path.join(base, 'index.js')].find((c) =>
            fs.existsSync(c),
          );
          if (target) edges.push({ from: path.relative(srcDir, p), to: path.relative(srcDir, target) });
        }
      }
    }
  };
  walk(srcDir);
  return edges;
}

/**
 * Imports against the direction of the layers, a feature reaching into another past its index.ts, and Prisma's
 * client used outside the catalog layer and repositories.
 */
export function violations(edges: Edge[]): string[] {
  const found: string[] = [];
  for (const { from, to } of edges) {
    const a = unitOf(from);
    const b = unitOf(to);
    if (b.layer === 'generated') {
      if (!from.startsWith('platform/db/') && !from.endsWith('.repository.ts'))
        found.push(`${from} -> ${to}: only repositories and platform/db use Prisma`);
    } else if (RANK[b.layer] > RANK[a.layer]) {
      found.push(`${from} -> ${to}: ${a.layer} must not import ${b.layer}`);
    } else if (a.layer === 'features' && b.layer === 'features' && a.unit !== b.unit && to !== `${b.unit}/index.ts`) {
      found.push(`${from} -> ${to}: another feature is used through what it exports (${b.unit}/index.ts)`);
    }
  }
  return found;
}

/**
 * The cycles of the graph (strongly connected sets of more than one node), each as its nodes: by default the nodes
 * are folders (units); `byFile` finds circles of files.
 */
export function cycles(edges: Edge[], byFile = false): string[][] {
  const key = (f: string) => (byFile ? f : unitOf(f).unit);
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const a = key(from);
    const b = key(to);
    if (a === b) continue;
    if (!next.has(a)) next.set(a, new Set());
    next.get(a)!.add(b);
  }
  // Tarjan's strongly connected components.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** For a cycle, the file-level imports that make it (to say what to move). */
export function cycleImports(edges: Edge[], units: string[]): string[] {
  const inCycle = new Set(units);
  return edges
    .filter((e) => {
      const a = unitOf(e.from).unit;
      const b = unitOf(e.to).unit;
      return a !== b && inCycle.has(a) && inCycle.has(b);
    })
    .map((e) => `${e.from} -> ${e.to}`);
}
