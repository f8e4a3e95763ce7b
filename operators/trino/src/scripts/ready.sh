#!/bin/bash
# Readiness of a Trino node: GET /v1/info answers and says "starting": false.
# /v1/info needs no authentication. The address and CA come from the environment
# (trino-http.sh).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/trino-http.sh"

if ! info=$(trino_curl /v1/info --fail --max-time 4 2>&1); then
    echo "not ready: ${info}"
    exit 1
fi
if [[ "${info}" =~ \"starting\":[[:space:]]*false ]]; then
    exit 0
fi
echo "not ready: the server is still starting"
exit 1
