#!/bin/bash
# Sourced by ready.sh and graceful-shutdown.sh: `trino_curl PATH [CURL OPTIONS...]`
# calls this node's own server at STRATA_TRINO_URL, which is http://127.0.0.1:8080, or
# with TLS https://<the pod's FQDN>:8443. Over TLS the request goes to 127.0.0.1 all
# the same (--connect-to), and the server's certificate is checked against
# STRATA_TRINO_CA for the pod's FQDN, the name the certificate covers, so a password
# is only ever sent to a server that proved it is this node.
#
# curl is in Trino's image (its own health check uses it).

trino_curl() {
    local path="$1"
    shift
    local url="${STRATA_TRINO_URL}"
    local options=(--silent --show-error --max-time 10)
    if [[ -n "${STRATA_TRINO_CA:-}" ]]; then
        local authority="${url#https://}"
        options+=(--cacert "${STRATA_TRINO_CA}" --connect-to "${authority}:127.0.0.1:${authority##*:}")
    fi
    curl "${options[@]}" "$@" "${url}${path}"
}

# The port of STRATA_TRINO_URL.
trino_port() {
    local authority="${STRATA_TRINO_URL#*://}"
    echo "${authority##*:}"
}
