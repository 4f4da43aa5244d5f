import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { parseObjectId, reconcileBodyId, resolveDelimiter } from './ids';
import { recordRequestPart } from './validation/request-parts';

interface RawRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body?: unknown;
}

/**
 * The object identifier of a REST-contract route: the `{id}` path segment split by `?delimiter=` (docs/rest-contract.md §4.1),
 * checked against the body's `id` when one is sent. Controllers receive a validated string[].
 */
const objectId = createParamDecorator((_: unknown, ctx: ExecutionContext): string[] => {
  const req = ctx.switchToHttp().getRequest<RawRequest>();
  const id = parseObjectId(req.params.id, resolveDelimiter(req.query.delimiter));
  const body = req.body as { id?: unknown } | null | undefined;
  return reconcileBodyId(id, body && typeof body === 'object' ? body.id : undefined);
});
export const ObjectId = (): ParameterDecorator => (target, key, index) => {
  recordRequestPart(target, key, { objectId: true });
  objectId()(target, key, index);
};

/** The request's delimiter (default `$`). */
const delimiter = createParamDecorator((_: unknown, ctx: ExecutionContext): string =>
  resolveDelimiter(ctx.switchToHttp().getRequest<RawRequest>().query.delimiter),
);
export const Delimiter = (): ParameterDecorator => (target, key, index) => {
  recordRequestPart(target, key, { delimiter: true });
  delimiter()(target, key, index);
};
