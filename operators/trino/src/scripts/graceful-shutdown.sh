#!/bin/bash
# preStop hook of a Trino worker: asks the worker to drain, then waits until its
# JVM has exited. The kubelet sends SIGTERM only after this script returns, and
# SIGTERM alone does not drain a worker.
#
# Usage: graceful-shutdown.sh USER [PASSWORD_FILE]
#
# With authentication on, USER's password is read from PASSWORD_FILE and handed to
# curl on its standard input, never on a command line. A refused request (anything
# but 200) exits 1, which the kubelet reports as a FailedPreStopHook Event.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/trino-http.sh"
user="$1"
password_file="${2:-}"
port="$(trino_port)"

credentials=()
config=""
if [[ -n "${password_file}" ]]; then
    credentials=(--config -)
    # curl's config file quotes the value: its backslashes, quotes and line breaks are
    # escaped, so a password can neither end the string nor start another option.
    password="$(<"${password_file}")"
    password="${password//\\/\\\\}"
    password="${password//\"/\\\"}"
    password="${password//$'\n'/\\n}"
    password="${password//$'\r'/\\r}"
    config="user = \"${user}:${password}\""
fi
# A wedged JVM may accept the connection and never answer: curl gives up after 10 s,
# so the kubelet's SIGTERM follows instead of the hook holding the pod.
response=$(printf '%s\n' "${config}" | trino_curl /v1/info/state "${credentials[@]}" \
    --request PUT --header "X-Trino-User: ${user}" \
    --header 'Content-Type: application/json' --data '"SHUTTING_DOWN"' \
    --write-out '\n%{http_code}' 2>&1)
sent=$?
status="${response##*$'\n'}"
# 7: curl could not connect.
if [[ "${sent}" == 7 ]]; then
    echo "graceful-shutdown: nothing listens on port ${port}; the server is already down"
    exit 0
fi
if [[ "${status}" != "200" ]]; then
    echo "graceful-shutdown: the worker refused to shut down: HTTP ${status}: ${response%$'\n'*}"
    exit 1
fi
echo "graceful-shutdown: the worker is draining; waiting for it to exit"

# The worker waits shutdown.grace-period, drains its tasks, waits again and exits;
# the port closes with the JVM.
while (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; do
    sleep 2
done
echo "graceful-shutdown: the worker has exited"
