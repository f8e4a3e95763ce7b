#!/bin/bash
# Readiness of a Trino node: GET /v1/info answers and says "starting": false.
# Bash builtins only, so a custom image needs no curl (483's own image has one).
#
# Usage: ready.sh PORT
set -u
port="$1"
exec 3<>"/dev/tcp/127.0.0.1/${port}" || exit 1
printf 'GET /v1/info HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "${port}" >&3
response=""
line=""
# Each read gives up after 4 s, within the probe's timeout.
while IFS= read -r -t 4 line <&3; do
    response+="${line}"$'\n'
done
response+="${line}"
exec 3<&- 3>&-
if [[ "${response}" != "HTTP/1."?" 200"* ]]; then
    echo "not ready: ${response%%$'\n'*}"
    exit 1
fi
if [[ "${response}" =~ \"starting\":[[:space:]]*false ]]; then
    exit 0
fi
echo "not ready: the server is still starting"
exit 1
