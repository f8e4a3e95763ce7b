#!/bin/bash
# preStop hook of a Trino worker: asks the worker to drain, then waits until its
# JVM has exited. The kubelet sends SIGTERM only after this script returns, and
# SIGTERM alone does not drain a worker.
#
# Usage: graceful-shutdown.sh PORT USER
#
# Only bash builtins and `sleep` are used, so the hook needs nothing else from an
# image: the request goes over bash's /dev/tcp. (483's image does install curl, for
# its own health check, but a custom image need not.) A refused request (anything but 200)
# exits 1, which the kubelet reports as a FailedPreStopHook Event.
set -u
port="$1"
user="$2"
body='"SHUTTING_DOWN"'

if ! exec 3<>"/dev/tcp/127.0.0.1/${port}"; then
    echo "graceful-shutdown: nothing listens on port ${port}; the server is already down"
    exit 0
fi
printf 'PUT /v1/info/state HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nX-Trino-User: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "${port}" "${user}" "${#body}" "${body}" >&3
status_line=""
# A wedged JVM may accept the connection and never answer: give up after 10 s, so
# the kubelet's SIGTERM follows instead of the hook holding the pod.
IFS= read -r -t 10 status_line <&3
exec 3<&- 3>&-
status_line="${status_line%$'\r'}"
case "${status_line}" in
    "HTTP/1.1 200"* | "HTTP/1.0 200"*) ;;
    *)
        echo "graceful-shutdown: the worker refused to shut down: ${status_line:-no answer}"
        exit 1
        ;;
esac
echo "graceful-shutdown: the worker is draining; waiting for it to exit"

# The worker waits shutdown.grace-period, drains its tasks, waits again and exits;
# the port closes with the JVM.
while (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; do
    sleep 2
done
echo "graceful-shutdown: the worker has exited"
