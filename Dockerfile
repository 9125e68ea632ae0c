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
COPY package.json package-lock.json ./
COPY dashboard/package.json dashboard/
RUN npm ci --omit=dev && npm cache clean --force
COPY . .
COPY --from=dashboard /app/dashboard/dist dashboard/dist
# DATA_DIR (./data): export files (a volume shared by the API and the workers in docker-compose.yml), owned by the user that writes them.
RUN mkdir -p data/exports && chown -R node:node data
USER node
EXPOSE 3000
CMD ["node", "api/server.ts"]
