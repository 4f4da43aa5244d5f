import { Controller, Post } from '@nestjs/common';
import { Errors } from '../../../platform/http/errors';
import { displayId } from '../../../platform/http/ids';
import { ObjectId } from '../../../platform/http/route-params';
import { Operation } from '../../../platform/http/operation.decorator';

/** Why no materialized view can be made or refreshed here (the answer's sentence, and the document's). */
const NO_VIEWS =
  'the Lance engine this gateway runs has no materialized views (a view is a query kept up to date by refresh ' +
  'jobs of LanceDB Enterprise, which the open engine does not include)';

/**
 * CreateMaterializedView and RefreshMaterializedView: served so that a client learns why (406, code 0) instead of
 * reading a missing route. The caller's credential is checked first, as for every data route.
 */
@Controller('v1/materialized_view')
export class MaterializedViewsController {
  @Post(':id/create')
  @Operation({
    operationId: 'CreateMaterializedView',
    summary: 'Create a materialized view',
    description: `Not supported: always 406 (code 0), because ${NO_VIEWS}.`,
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'create', on: 'table', creates: true },
    responses: { 201: { description: 'Never answered: always 406 (code 0)' } },
    errors: [400, 401, 403, 406, 503, '5XX'],
  })
  create(@ObjectId() id: string[]): never {
    throw Errors.unsupported(`cannot create materialized view '${displayId(id)}': ${NO_VIEWS}`);
  }

  @Post(':id/refresh')
  @Operation({
    operationId: 'RefreshMaterializedView',
    summary: 'Trigger an async materialized view refresh',
    description: `Not supported: always 406 (code 0), because ${NO_VIEWS}.`,
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'modify', on: 'table' },
    responses: { 202: { description: 'Never answered: always 406 (code 0)' } },
    errors: [400, 401, 403, 406, 503, '5XX'],
  })
  refresh(@ObjectId() id: string[]): never {
    throw Errors.unsupported(`cannot refresh materialized view '${displayId(id)}': ${NO_VIEWS}`);
  }
}
