#!/usr/bin/env bash
# The Trino container's entry point: assembles the keystore with TLS, turns the catalog
# values that are lists into the comma-separated form Trino reads, then execs its
# arguments (the launcher), so the JVM is the container's process and gets its signals.
#
# Trino reads its HTTPS keystore from one PEM file with the certificate and its key,
# while the certificate Secret (the operator's, or cert-manager's) has them apart:
# STRATA_TLS_DIR/tls.crt and tls.key are joined into STRATA_KEYSTORE, a file in memory
# only this user can read. A pod reads its certificate only when it starts; a new one
# rolls the pods.
#
# A Hive metastore list read from a discovery ConfigMap may hold one URI per line, as
# the metastore operators publish several. Trino splits `hive.metastore.uri` on commas
# and reads each part with URI.create, which refuses a line break, so every pod of the
# cluster would exit at start. STRATA_COMMA_LISTS names the variables (space-separated)
# whose value is such a list: every run of commas and whitespace becomes one comma,
# and a leading or trailing one goes.

set -euo pipefail

if [[ -n "${STRATA_KEYSTORE:-}" ]]; then
    (
        umask 077
        { cat "${STRATA_TLS_DIR}/tls.crt"; echo; cat "${STRATA_TLS_DIR}/tls.key"; } >"${STRATA_KEYSTORE}"
    )
fi

for variable in ${STRATA_COMMA_LISTS:-}; do
    IFS=$' \t\r\n,' read -r -d '' -a parts <<<"${!variable:-}" || true
    joined=$(IFS=,; printf '%s' "${parts[*]}")
    export "$variable=$joined"
done

exec "$@"
