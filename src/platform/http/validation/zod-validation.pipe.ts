import { Body, PipeTransform, Query } from '@nestjs/common';
import { z } from 'zod';
import { Errors } from '../errors';
import { recordRequestPart } from './request-parts';

/** Where a schema reads from. */
export type RequestPart = 'body' | 'query';

/**
 * The one validation pipe: applies a zod schema to the request body or the query string and hands the handler the
 * typed result. Any problem is a 400 with code InvalidInput (13), every issue listed as `path: message`.
 *
 * Bodies may be absent, empty or JSON `null` (the official clients send `null` on some routes): those read as `{}`.
 * Anything else that is not a JSON object is refused before the schema sees it.
 */
export class ZodValidationPipe<S extends z.ZodType> implements PipeTransform<unknown, z.output<S>> {
  constructor(
    readonly schema: S,
    readonly part: RequestPart,
  ) {}

  transform(value: unknown): z.output<S> {
    let input = value;
    if (this.part === 'body') {
      input = value === undefined || value === null || value === '' ? {} : value;
      if (typeof input !== 'object' || Array.isArray(input)) throw Errors.invalidInput('request body must be a JSON object');
    }
    const r = this.schema.safeParse(input ?? {});
    if (!r.success) throw Errors.invalidInput(describeIssues(r.error));
    return r.data;
  }
}

export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ');
}

/** The handler parameter is the request body, validated by `schema` (and the document shows `schema`). */
export function ValidBody<S extends z.ZodType>(schema: S): ParameterDecorator {
  return (target, key, index) => {
    recordRequestPart(target, key, { body: schema });
    Body(new ZodValidationPipe(schema, 'body'))(target, key, index);
  };
}

/** The handler parameter is the query string, validated by `schema` (and the document shows `schema`). */
export function ValidQuery<S extends z.ZodObject>(schema: S): ParameterDecorator {
  return (target, key, index) => {
    recordRequestPart(target, key, { query: schema });
    Query(new ZodValidationPipe(schema, 'query'))(target, key, index);
  };
}
