import { Controller, Post } from '@nestjs/common';
import { z } from 'zod';
import { Delimiter, ObjectId } from '../../../platform/http/route-params';
import { ValidBody } from '../../../platform/http/validation/zod-validation.pipe';
import { Audited } from '../../audit';
import { Operation, WITH_CONFLICT } from '../../../platform/http/operation.decorator';
import { Tenant, TenantContext } from '../../identity';
import { CloneTableBody, CloneTableResponse } from './table-clone.schemas';
import { TableCloneService } from './table-clone.service';

/** CloneTable, as the official remote client sends it (no Lance Namespace spec operation). */
@Controller('v1')
export class TableCloneController {
  constructor(private readonly clones: TableCloneService) {}

  @Post('table/:id/clone')
  @Operation({
    operationId: 'CloneTable',
    summary: 'Clone a table of the same database',
    description:
      "Makes table `{id}` from a table of the caller's own database (and prefix), at its latest version, " +
      "`source_version` or `source_tag`. Shallow (default): the clone refers to the source's data files (the source then cannot be " +
      'dropped or deregistered while the clone exists: 409 code 19); deep: the rows are copied (not indexes, tags or history). 409 (code 5) when `{id}` ' +
      'exists; 400 for a `source_location` outside the database, 404 for one where no table of it is registered.',
    tag: 'Table data',
    access: 'catalog',
    needs: { privilege: 'create', on: 'table', creates: true },
    responses: { 200: { description: 'The clone', schema: CloneTableResponse } },
    errors: WITH_CONFLICT,
  })
  @Audited('table.clone', (b) => ({ source_location: b?.source_location ?? null, is_shallow: b?.is_shallow ?? true }))
  clone(
    @Tenant() t: TenantContext,
    @ObjectId() id: string[],
    @Delimiter() delimiter: string,
    @ValidBody(CloneTableBody) body: z.output<typeof CloneTableBody>,
  ) {
    return this.clones.clone(t, id, body, delimiter);
  }
}
