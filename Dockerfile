# The schedwatch exporter on Debian 12 slim, installed from the Debian package this repository
# builds, with the same script the package test runs in a fresh root:
#   scripts/build-image            builds the package if needed, then the image schedwatch:<version>
# (by hand: cmake --build build && (cd build && cpack) && docker build -t schedwatch:<version> .)
FROM debian:12-slim
COPY build/packages/schedwatch_*.deb packaging/install-in-root.sh /tmp/schedwatch/
# curl is for the health check; libcurl is a dependency of the exporter anyway.
RUN sh /tmp/schedwatch/install-in-root.sh /tmp/schedwatch/schedwatch_*.deb curl \
    && rm -rf /tmp/schedwatch
# nobody: the spec is read-only, the exporter writes nothing unless given --ledger.file.
USER 65534:65534
EXPOSE 9762
# Kubernetes probes use /-/healthy and /-/ready directly (examples/kubernetes/deployment.yaml).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:9762/-/healthy"]
ENTRYPOINT ["/usr/bin/schedwatch_exporter"]
CMD ["--config.file=/etc/schedwatch/spec.yaml"]
