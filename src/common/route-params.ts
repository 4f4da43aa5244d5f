import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { parseObjectId, reconcileBodyId, resolveDelimiter } from './ids';

interface RawRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body?: unknown;
}

/**
 * The object identifier of a REST-contract route: the `{id}` path segment split by `?delimiter=` (docs/rest-contract.md §4.1),
 * checked against the body's `id` when one is sent. Controllers receive a validated string[].
 */
export const ObjectId = createParamDecorator((_: unknown, ctx: ExecutionContext): string[] => {
  const req = ctx.switchToHttp().getRequest<RawRequest>();
  const id = parseObjectId(req.params.id, resolveDelimiter(req.query.delimiter));
  const body = req.body as { id?: unknown } | null | undefined;
  return reconcileBodyId(id, body && typeof body === 'object' ? body.id : undefined);
});

/** The request's delimiter (default `$`). */
export const Delimiter = createParamDecorator((_: unknown, ctx: ExecutionContext): string =>
  resolveDelimiter(ctx.switchToHttp().getRequest<RawRequest>().query.delimiter),
);
