import { z } from 'zod';
import { JsonSchema } from '../../platform/http/operation.decorator';

/** Converts zod schemas to JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) into `components.schemas`. */
export class SchemaComponents {
  readonly schemas: Record<string, JsonSchema> = {};

  /**
   * The inline schema, or a `$ref` to a named component: the schema's own `id` (`.meta`) names it, else `name`
   * when given.
   */
  convert(schema: z.ZodType, io: 'input' | 'output', name?: string): JsonSchema {
    let json: JsonSchema;
    try {
      json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
    } catch (err) {
      return { description: `schema not convertible: ${(err as Error).message}` };
    }
    delete json.$schema;
    const defs = (json.$defs ?? {}) as Record<string, JsonSchema>;
    delete json.$defs;
    // Named sub-schemas (`.meta({ id })`) become components of their own; anonymous ones (cycles) get a prefix.
    const rename = (def: string) => (def.startsWith('__') ? `${name ?? 'Schema'}${def}` : def);
    const rewrite = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(rewrite);
      if (v && typeof v === 'object') {
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) {
          // zod bounds every integer to the safe range: true of every JSON number this gateway sends, so left out.
          if ((k === 'minimum' && x === Number.MIN_SAFE_INTEGER) || (k === 'maximum' && x === Number.MAX_SAFE_INTEGER)) continue;
          out[k] =
            k === '$ref' && typeof x === 'string' && x.startsWith('#/$defs/') ? `#/components/schemas/${rename(x.slice(8))}` : rewrite(x);
        }
        return out;
      }
      return v;
    };
    for (const [def, body] of Object.entries(defs)) this.schemas[rename(def)] = rewrite(body) as JsonSchema;
    const result = rewrite(json) as JsonSchema;
    if (!name || typeof result.$ref === 'string') return result;
    this.schemas[name] = result;
    return { $ref: `#/components/schemas/${name}` };
  }
}
