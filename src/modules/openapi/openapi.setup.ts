import type { INestApplication } from '@nestjs/common';
import { SwaggerModule } from '@nestjs/swagger';
import type { AppConfig } from '../../platform/config/config';
import { buildOpenApiDocument, DOCS_PATH, OPENAPI_JSON_PATH } from './openapi.document';

/**
 * Serves the OpenAPI document at GET /openapi.json and Swagger UI at GET /docs (public, outside BASE_PATH). Call
 * once before `app.init()`. The document is built on its first request, from the routes registered by then, and
 * kept.
 */
export function setupOpenApi(app: INestApplication, config: AppConfig): void {
  SwaggerModule.setup(DOCS_PATH.slice(1), app, () => buildOpenApiDocument(app, config), {
    jsonDocumentUrl: OPENAPI_JSON_PATH.slice(1),
    raw: ['json'],
    customSiteTitle: 'Lance Gateway API',
    swaggerOptions: { docExpansion: 'none', tagsSorter: 'alpha', operationsSorter: 'alpha' },
  });
}
