# mailsvc in a container: one self-contained binary on a small runtime base.
#
#   docker build -t mailsvc .
#   docker run -d --name mailsvc -p 3000:3000 -v mailsvc-data:/data mailsvc
#
# Both base images are build arguments, so a builder without a registry can use its own
# (scripts/container/bases.sh makes them with mmdebstrap; scripts/container/ci.sh builds this file):
#   BUILD_IMAGE    has Node.js and npm (npm ci installs Bun itself, from npm)
#   RUNTIME_IMAGE  has glibc and libcrypto 3 (DKIM signing), and CA certificates: distroless
#                  cc-debian12 or debian:bookworm-slim; not static or Alpine (musl)
ARG BUILD_IMAGE=node:22-bookworm-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
# The dependencies first: this layer is reused until package-lock.json changes.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund \
 && (node_modules/.bin/bun --version >/dev/null 2>&1 || node node_modules/bun/install.js)
COPY tsconfig.json bunfig.toml ./
COPY migrations ./migrations
COPY src ./src
RUN MAILSVC_WEB_QUIET=1 npm run build \
 && ./mailsvc --version \
 && ./mailsvc selfcheck \
 && mkdir -p /rootfs/usr/local/bin /rootfs/data \
 && mv mailsvc /rootfs/usr/local/bin/mailsvc

FROM ${RUNTIME_IMAGE}
COPY --from=build /rootfs/usr/local/bin/mailsvc /usr/local/bin/mailsvc
# The database lives in the /data volume, owned by the runtime user, or SQLite cannot create its file.
COPY --from=build --chown=65532:65532 /rootfs/data /data
USER 65532:65532
# The SQLite file is /data/mailsvc.db: the default ./data/mailsvc.db, from /. MAILSVC_DB is deliberately not
# set here: MAILSVC_DATABASE_URL (PostgreSQL) is refused beside it, so that one variable alone switches the
# engine (compose.yaml's postgres profile). `mailsvc backup` takes an absolute path: /data/backup-….db.
WORKDIR /
ENV MAILSVC_HOST=0.0.0.0 \
    MAILSVC_PORT=3000
VOLUME ["/data"]
EXPOSE 3000
# serve stops on SIGTERM: in-flight work finishes, the WAL is checkpointed into /data/mailsvc.db, exit 0.
STOPSIGNAL SIGTERM
# No shell in the image: the binary checks itself (GET /health on MAILSVC_HOST/MAILSVC_PORT, exit 0 on 200).
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 CMD ["/usr/local/bin/mailsvc", "health"]
ENTRYPOINT ["/usr/local/bin/mailsvc"]
CMD ["serve"]
