export { buildOpenApiDocument, DOCS_PATH, OPENAPI_JSON_PATH } from './openapi.document';
export { setupOpenApi } from './openapi.setup';
