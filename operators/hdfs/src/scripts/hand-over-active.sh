#!/usr/bin/env bash
# The namenode container's preStop hook: before a planned stop (a roll, a drain, a pod
# deletion), an active namenode hands the active role to a standby, through the ZKFCs
# (`hdfs haadmin -failover`, graceful with automatic failover). Without it, the
# active's ZooKeeper lock lingers for the session timeout after it stops, then the
# standby fences it: an outage of tens of seconds on every planned restart.
#
# Usage: hand-over-active.sh NAMENODE_ID... (every namenode of the nameservice; this
# pod is POD_NAME among them). A standby, an unreachable namenode or a failed
# hand-over stops as before: the hook always exits 0, and the ZKFCs fail over once
# this namenode's session ends.
#
# The `hdfs` client runs beside the namenode's JVM in the same memory limit, so it gets
# a small heap.

set -uo pipefail

readonly SCRIPT=hand-over-active
export HADOOP_CLIENT_OPTS="-Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"

log() {
    printf '%s: %s\n' "$SCRIPT" "$*"
}

state_of() {
    hdfs haadmin -getServiceState "$1" 2>/dev/null | tail -n 1
}

self=${POD_NAME:?POD_NAME must name this pod}
if [[ $(state_of "$self") != active ]]; then
    log "$self is not the active namenode: nothing to hand over"
    exit 0
fi
for other in "$@"; do
    [[ $other == "$self" ]] && continue
    if [[ $(state_of "$other") != standby ]]; then
        continue
    fi
    if hdfs haadmin -failover "$self" "$other"; then
        log "handed the active role from $self to $other before stopping"
        exit 0
    fi
    log "the hand-over to $other failed"
done
log "no standby took over; stopping as the active namenode (the ZKFCs fail over once its session ends)"
exit 0
