# Cosmic Clash images (SPEC 1, 12). Build them all with `make images`
# (scripts/images.sh): podman build --isolation=chroot --pull=never, one
# --target per image. No registry is needed: BASE is a Debian bookworm
# minbase root filesystem that scripts/images.sh makes from the Debian
# archive with mmdebstrap and imports under this name.
#
# Targets (image localhost/cosmic-clash/<target>):
#   cc-api cc-matcher cc-allocator cc-maintenance cc-migrate  services
#   cc-gameserver   cc-supervisor (entrypoint) with cc-gameserver beside it
#   fake-steam      DEV ONLY: tests/fakes/fake_steam, the disposable stack's Steam
#   stack-postgres stack-redis  DEV ONLY: Debian's PostgreSQL and Redis for the stack
#
# Every service image: the binary, exactly the shared libraries it links that
# the base lacks (ldd in the builder, copied from their Debian packages with
# their copyright files; the build fails if ldd finds anything missing), no
# compiler, no testkit, no fake; user 10001:10001; HOME=/home/cc and /tmp are
# meant to be writable volumes under a read-only root filesystem.
ARG BASE=localhost/cosmic-clash/debian:bookworm-minbase

# ---- builder: compilers and -dev packages from the Debian archive ----------------
FROM ${BASE} AS builder
# What the base already has: those packages' libraries are in every image.
RUN dpkg-query -W -f='${Package}\n' >/base-packages
# The -dev packages scripts/ensure-deps.sh installs for the build (no test tooling).
RUN apt-get update -qq && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      gcc libc6-dev make pkg-config ca-certificates \
      libmicrohttpd-dev libcurl4-openssl-dev libpq-dev libhiredis-dev libcjson-dev \
      libsodium-dev libenet-dev libwslay-dev >/dev/null && \
    rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . /src
# A release build of the service binaries and the one fake the stack needs;
# never the testkit (`make all` would also link cc-testkit-api).
ARG REVISION=unknown
RUN make -j2 CC_GIT_REV="${REVISION}" build/bin/cc-api build/bin/cc-matcher build/bin/cc-allocator \
      build/bin/cc-maintenance build/bin/cc-migrate build/bin/cc-supervisor build/bin/cc-gameserver \
      build/fakes/fake_steam
# One tree per image: binaries, their non-base libraries, data.
RUN set -e; lay() { t=$1; shift; mkdir -p /out/$t/usr/local/bin; \
      for b in "$@"; do cp "$b" /out/$t/usr/local/bin/; done; \
      sh scripts/image-runtime-libs.sh /base-packages /out/$t "$@"; }; \
    for s in api matcher allocator maintenance migrate; do lay cc-$s build/bin/cc-$s; done; \
    lay cc-gameserver build/bin/cc-supervisor build/bin/cc-gameserver; \
    lay fake-steam build/fakes/fake_steam; \
    mkdir -p /out/cc-migrate/usr/local/share/cosmic-clash && \
    cp -r migrations /out/cc-migrate/usr/local/share/cosmic-clash/migrations; \
    for t in cc-api cc-allocator cc-gameserver; do \
      mkdir -p /out/$t/etc/ssl/certs /out/$t/usr/share/doc/ca-certificates; \
      cp /etc/ssl/certs/ca-certificates.crt /out/$t/etc/ssl/certs/; \
      cp /usr/share/doc/ca-certificates/copyright /out/$t/usr/share/doc/ca-certificates/; done

# ---- runtime: the base, a numeric non-root user, the labels -----------------------
FROM ${BASE} AS runtime-base
RUN echo 'cc:x:10001:10001:Cosmic Clash:/home/cc:/usr/sbin/nologin' >>/etc/passwd && \
    echo 'cc:x:10001:' >>/etc/group && \
    mkdir -p /home/cc && chown 10001:10001 /home/cc && chmod 0700 /home/cc
ENV HOME=/home/cc
WORKDIR /home/cc

# The labels' build args change with every commit: the dev-only images of
# Debian's servers build FROM runtime-base, so their apt-get stays cached.
FROM runtime-base AS runtime
ARG VERSION=0.0.0
ARG REVISION=unknown
ARG SOURCE=unknown
LABEL org.opencontainers.image.title="Cosmic Clash backend" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.base.name="debian:bookworm (mmdebstrap --variant=minbase)"

FROM runtime AS cc-api
COPY --from=builder /out/cc-api/ /
RUN ldconfig && ! ldd /usr/local/bin/* | grep 'not found'
USER 10001:10001
EXPOSE 8080 9180
ENTRYPOINT ["/usr/local/bin/cc-api"]

FROM runtime AS cc-matcher
COPY --from=builder /out/cc-matcher/ /
RUN ldconfig && ! ldd /usr/local/bin/* | grep 'not found'
USER 10001:10001
EXPOSE 9181
ENTRYPOINT ["/usr/local/bin/cc-matcher"]

FROM runtime AS cc-allocator
COPY --from=builder /out/cc-allocator/ /
RUN ldconfig && ! ldd /usr/local/bin/* | grep 'not found'
USER 10001:10001
EXPOSE 9183
ENTRYPOINT ["/usr/local/bin/cc-allocator"]

FROM runtime AS cc-maintenance
COPY --from=builder /out/cc-maintenance/ /
RUN ldconfig && ! ldd /usr/local/bin/* | grep 'not found'
USER 10001:10001
EXPOSE 9184
ENTRYPOINT ["/usr/local/bin/cc-maintenance"]

# cc-migrate finds the migrations at <bin>/../share/cosmic-clash/migrations.
FROM runtime AS cc-migrate
COPY --from=builder /out/cc-migrate/ /
RUN ldconfig && ! ldd /usr/local/bin/* | grep 'not found'
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/cc-migrate"]
CMD ["up"]

# cc-supervisor runs cc-gameserver from beside itself (its --gameserver default).
FROM runtime AS cc-gameserver
COPY --from=builder /out/cc-gameserver/ /
RUN ldconfig && ! ldd /usr/local/bin/* | grep 'not found'
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/cc-supervisor"]

# ---- DEV ONLY: the disposable stack (scripts/stack.sh); never in k8s/ -------------
FROM runtime AS fake-steam
COPY --from=builder /out/fake-steam/ /
RUN ldconfig && ! ldd /usr/local/bin/* | grep 'not found'
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/fake_steam"]

# The packages' scripts must not start a server in the build (policy-rc.d), and
# the cluster postgresql-common makes is dropped: the stack runs initdb itself.
FROM runtime-base AS stack-postgres
RUN printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d && \
    apt-get update -qq && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null && \
    rm -rf /var/lib/apt/lists/* /var/lib/postgresql/15/main /etc/postgresql/15/main /usr/sbin/policy-rc.d
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER 10001:10001
ENTRYPOINT ["/usr/lib/postgresql/15/bin/postgres"]

FROM runtime-base AS stack-redis
RUN printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d && \
    apt-get update -qq && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null && \
    rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d
USER 10001:10001
ENTRYPOINT ["/usr/bin/redis-server"]
