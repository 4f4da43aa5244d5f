import { z } from 'zod';
import { queryParam } from '../../../platform/http/validation/fields';
import { branchParam } from '../dataplane.schemas';

/** multipart_write/create takes the branch; complete and abort name the upload. */
export const UploadQuery = z.object({
  upload_id: queryParam(z.string({ error: 'upload_id is required' }).min(1, 'upload_id is required')).describe(
    'The id multipart_write/create answered.',
  ),
  branch: branchParam(),
});
