/**
 * The `phalanx-version` this gateway advertises to the official remote client: 0.2.0 = one query may carry several
 * vectors (answered with a `query_index` column); 0.3.0 = structured full-text queries (match, phrase, boost,
 * multi_match, boolean); 0.4.0 = multipart writes (`multipart_write/create|complete|abort`, inserts with
 * `upload_id`, test/multipart.test.ts). Blobs (0.5.0) are not implemented, so not advertised.
 */
export const PHALANX_VERSION = '0.4.0';

export const ARROW_STREAM_TYPE = 'application/vnd.apache.arrow.stream';
export const ARROW_FILE_TYPE = 'application/vnd.apache.arrow.file';

/** Routes whose body is an Arrow IPC stream (with or without BASE_PATH and a trailing slash). */
const ARROW_ROUTE = /\/v1\/(table\/[^/?]+\/(create|insert|merge_insert)|tables\/[^/?]+)\/?(\?|$)/;

/**
 * The official remote client may send an Arrow body without a Content-Type; Fastify would refuse it (415). Such a
 * request to an Arrow route is taken as an Arrow stream.
 */
export function isArrowRouteWithoutType(method: string, url: string, headers: Record<string, unknown>): boolean {
  return method === 'POST' && headers['content-type'] === undefined && ARROW_ROUTE.test(url);
}
