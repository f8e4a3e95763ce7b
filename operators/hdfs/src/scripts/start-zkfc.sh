#!/usr/bin/env bash
# The ZKFC sidecar: creates the failover znode when it is missing, then runs zkfc.
#
# Inputs (environment): TERMINATION_LOG (default /dev/termination-log), RETRY_SECONDS
# (default 10), FORMAT_ATTEMPTS (default 30): unexpected formatZK codes before stopping.
#
# `hdfs zkfc -formatZK -nonInteractive` (Hadoop 3.4): 0 created, 2 already exists,
# 5 automatic failover not enabled, 6 ZooKeeper unreachable. Never -force: that would
# delete the znode of a running failover group.
#
# "Stop with reason R": $TERMINATION_LOG gets two lines, R and a one-sentence message; the
# message also goes to stderr; exit 1.
#
# Until it `exec`s zkfc, the script is its container's PID 1, which ignores a SIGTERM it
# has no handler for; the trap ends the wait for ZooKeeper at once, so a pod deletion
# does not wait the whole grace period. zkfc itself (a JVM) handles SIGTERM.

set -euo pipefail

readonly SCRIPT=start-zkfc
TERMINATION_LOG=${TERMINATION_LOG:-/dev/termination-log}

log() {
    printf '%s: %s\n' "$SCRIPT" "$*"
}

# stop REASON MESSAGE: records the reason for the operator and ends the container.
stop() {
    local reason=$1 message=${2//[[:cntrl:]]/ }
    if ((${#message} > 990)); then
        message="${message:0:987}..."
    fi
    if ! printf '%s\n%s\n' "$reason" "$message" 2>/dev/null >"$TERMINATION_LOG"; then
        log "cannot write the termination log $TERMINATION_LOG"
    fi
    printf '%s: stop: %s: %s\n' "$SCRIPT" "$reason" "$message" >&2
    exit 1
}

# require_count NAME VALUE MIN: VALUE is a decimal integer of at least MIN.
require_count() {
    local name=$1 value=$2 min=$3
    if ! [[ $value =~ ^[0-9]{1,6}$ ]] || ((10#$value < min)); then
        stop InvalidEnvironment "$name must be an integer of at least $min, got '$value'."
    fi
}

RETRY_SECONDS=${RETRY_SECONDS:-10}
FORMAT_ATTEMPTS=${FORMAT_ATTEMPTS:-30}
require_count RETRY_SECONDS "$RETRY_SECONDS" 0
require_count FORMAT_ATTEMPTS "$FORMAT_ATTEMPTS" 1

trap 'log "stopping on request"; exit 0' TERM INT

failures=0
while true; do
    code=0
    hdfs zkfc -formatZK -nonInteractive || code=$?
    case $code in
    0)
        log "created the failover znode in ZooKeeper; starting zkfc"
        break
        ;;
    2)
        log "the failover znode already exists in ZooKeeper; starting zkfc"
        break
        ;;
    6) log "waiting $RETRY_SECONDS s: ZooKeeper is unreachable (exit 6)" ;;
    5) stop AutomaticFailoverDisabled "hdfs zkfc -formatZK reports that automatic failover is not enabled (exit 5): set dfs.ha.automatic-failover.enabled=true and ha.zookeeper.quorum in the configuration this sidecar reads." ;;
    *)
        failures=$((failures + 1))
        if ((failures >= FORMAT_ATTEMPTS)); then
            stop ZkfcFormatFailed "hdfs zkfc -formatZK -nonInteractive exited with unexpected codes $failures times (last $code): see this container's log, and check that the ZooKeeper chroot of ha.zookeeper.quorum exists."
        fi
        log "hdfs zkfc -formatZK exited $code unexpectedly ($failures of $FORMAT_ATTEMPTS); retrying in $RETRY_SECONDS s"
        ;;
    esac
    sleep "$RETRY_SECONDS" &
    wait $!
done

exec hdfs zkfc
