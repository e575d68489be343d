# One image for every app; the command picks which one runs.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY apps ./apps
COPY libs ./libs
COPY scripts ./scripts
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
# npm 11.19 knows --allow-git/--allow-remote/--allow-file/--allow-directory, with which component dependencies come
# from the registry only (docs/sandbox.md, "npm packages and version pins"); the image's own npm 10 ignores them.
RUN npm install -g --no-audit --no-fund npm@11.19.1
# bubblewrap builds the per-account sandboxes component code runs in (api and runner; docs/sandbox.md).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY scripts ./scripts
COPY registry ./registry
COPY bin ./bin
# /nats-auth: the docker compose `nats-auth` job (running as node) writes the NATS credentials there.
RUN mkdir -p /data /nats-auth && chown node:node /data /nats-auth
USER node
VOLUME /data
EXPOSE 3000 9464 9465
CMD ["node", "dist/apps/api/main.js"]
