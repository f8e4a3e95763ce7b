# syntax=docker/dockerfile:1
#
# The container image of one Strata operator. `cargo xtask images` builds it once per
# registered operator, from the workspace root:
#
#   docker build --file docker/operator.Dockerfile --build-arg OPERATOR=zookeeper-operator .
#
# OPERATOR is the operator's package and binary name. The build needs BuildKit (cache
# mounts, and operator.Dockerfile.dockerignore next to this file keeps target/ out of the
# build context).

# Build stage: compiles the one operator binary; nothing of this stage is shipped.
FROM rust:1.95.0-slim-bookworm AS builder
ARG OPERATOR
WORKDIR /workspace
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/workspace/target \
    test -n "${OPERATOR}" \
    && cargo build --release --locked --package "${OPERATOR}" --bin "${OPERATOR}" \
    && install -D --mode 0555 "target/release/${OPERATOR}" /out/operator

# Runtime stage: glibc and libgcc only, no shell, no package manager; the same Debian 12
# as the build stage, so the binary finds the C library it was linked against.
FROM gcr.io/distroless/cc-debian12:nonroot
ARG OPERATOR
ARG VERSION=0.0.0-dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="${OPERATOR}" \
      org.opencontainers.image.description="Strata ${OPERATOR}, a Kubernetes operator for data products" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/strata-dev/strata" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="gcr.io/distroless/cc-debian12:nonroot"
COPY --from=builder /out/operator /usr/local/bin/operator
# The distroless "nonroot" user, by number so Kubernetes can verify runAsNonRoot.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/operator"]
CMD ["run"]
