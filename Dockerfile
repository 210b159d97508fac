# The platform image used by docker-compose.yml; ROLES picks what a container runs.
FROM node:20-bookworm-slim AS build
# better-sqlite3 compiles from source when no prebuilt binary matches.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY bench bench
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 DATA_DIR=/data
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
# The wallboard's static page (GET /wallboard).
COPY public public
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080 8989
STOPSIGNAL SIGTERM
# A larger young generation: fewer scavenges and less promoted (see README, "Commands and reads at constant cost").
CMD ["node", "--max-semi-space-size=64", "dist/src/main.js"]
