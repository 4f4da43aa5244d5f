# syntax=docker/dockerfile:1
# Production image of the gateway: build stage (all dependencies, Prisma client, TypeScript), then a slim runtime
# stage with production dependencies only, running as the unprivileged `node` user.
# glibc base (not Alpine): the native Lance engine ships linux-x64-gnu / linux-arm64-gnu binaries.

FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.prod.json prisma.config.ts ./
COPY scripts ./scripts
COPY prisma ./prisma
COPY src ./src
COPY console ./console
# The web console (docs/console.md) is built from the compiled gateway's OpenAPI document into dist/console.
RUN node scripts/prisma-generate.js \
 && npx tsc -p tsconfig.prod.json \
 && node scripts/build-console.js \
 && npm prune --omit=dev --no-audit --no-fund

FROM node:22-bookworm-slim
# jemalloc for the engine's buffers (docs/production.md#memory): scripts/start.sh preloads it; without it the start
# script falls back to glibc settings that bound memory but slow brute-force vector queries.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libjemalloc2 \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=2333 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/scripts/start.sh ./scripts/start.sh
# Migrations are applied by the gateway at start-up (compatible with `prisma migrate deploy`).
COPY --from=build /app/prisma ./prisma
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 2333
VOLUME ["/data"]
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||2333)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["sh", "scripts/start.sh", "dist/src/main.js"]
