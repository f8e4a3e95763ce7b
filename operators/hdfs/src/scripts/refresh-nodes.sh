#!/usr/bin/env bash
# The namenode's refresh-nodes sidecar: keeps the namenode's exclude list current.
#
# The operator writes the datanodes to decommission into the namenode state ConfigMap,
# which the kubelet updates in the mounted EXCLUDE_FILE (dfs.hosts.exclude) within about
# a minute. A namenode reads that file only at start and on `dfsadmin -refreshNodes`, so
# this loop asks its own namenode to re-read it whenever the file's content changes, and
# once at start (the namenode may have started before the last change arrived).
#
# Inputs (environment): EXCLUDE_FILE; RPC_ADDRESS (default 127.0.0.1:8020, the namenode
# in this pod, active or standby: both take the list); CHECK_SECONDS (default 10).
#
# The script is its container's PID 1, which ignores a SIGTERM it has no handler for:
# without the trap, every namenode pod deletion would wait the whole grace period. The
# wait between checks is a background sleep, so the trap runs at once; a running
# `dfsadmin` call finishes first (the runtime signals PID 1 only).

set -uo pipefail

readonly SCRIPT=refresh-nodes
: "${EXCLUDE_FILE:?EXCLUDE_FILE must name the exclude list}"
RPC_ADDRESS=${RPC_ADDRESS:-127.0.0.1:8020}
CHECK_SECONDS=${CHECK_SECONDS:-10}

log() {
    printf '%s: %s\n' "$SCRIPT" "$*"
}

fingerprint() {
    cksum <"$EXCLUDE_FILE" 2>/dev/null || echo missing
}

trap 'log "stopping on request"; exit 0' TERM INT

applied=""
while true; do
    current=$(fingerprint)
    if [[ $current != "$applied" ]]; then
        hosts=$(grep -c . "$EXCLUDE_FILE" 2>/dev/null || true)
        if hdfs dfsadmin -fs "hdfs://$RPC_ADDRESS" -refreshNodes; then
            log "the namenode re-read the exclude list (${hosts:-0} host(s))"
            applied=$current
        else
            log "refreshNodes failed (the namenode may still be starting); retrying in ${CHECK_SECONDS}s"
        fi
    fi
    sleep "$CHECK_SECONDS" &
    wait $!
done
