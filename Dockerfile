# The engine's image: one image, three entry points (api, worker and the exports worker), from the official Node.js image.
# Stage 1 builds the dashboard (dashboard/, React + Vite) with the dev dependencies; the runtime image gets only dashboard/dist.
FROM node:24-bookworm-slim AS dashboard
WORKDIR /app
COPY package.json package-lock.json ./
COPY dashboard/package.json dashboard/
RUN npm ci --no-audit --no-fund
COPY . .
RUN node dev/dashboard-build.ts --force

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# Two glibc malloc arenas instead of eight per core: memory freed by native code (argon2's 19 MiB per password hash,
# TLS, zlib) is reused instead of held per thread: the API peaked at 265 MB under load with it, 278 and 312 MB without
# (docs/usage.md#measured).
ENV MALLOC_ARENA_MAX=2
COPY package.json package-lock.json ./
COPY dashboard/package.json dashboard/
RUN npm ci --omit=dev && npm cache clean --force
COPY . .
COPY --from=dashboard /app/dashboard/dist dashboard/dist
# DATA_DIR (./data): export files (a volume shared by the API and the workers in docker-compose.yml), owned by the user that writes them.
RUN mkdir -p data/exports && chown -R node:node data
USER node
EXPOSE 3000
# 16 MB semi-spaces: V8 would size the young generation from the host's memory (128 MB on a 23 GB machine); a 256 MB
# old generation: V8 collects before growing past it instead of keeping garbage (the live heap is about 60-100 MB).
# The API stays under 300 MB under load with them (docs/usage.md#measured). Same flags as `npm run api`.
CMD ["node", "--max-semi-space-size=16", "--max-old-space-size=256", "api/server.ts"]
