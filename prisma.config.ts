// Used by the Prisma CLI (generate; `migrate deploy` where its schema engine is available).
// The gateway itself applies prisma/migrations with its own compatible runner (src/platform/db/migrator.ts).
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost/unused' },
});
