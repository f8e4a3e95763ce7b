#!/usr/bin/env bash
# The namenode's refresh-nodes sidecar: keeps the namenode's exclude list current, and
# starts a new edit log segment when the operator asks for one.
#
# The operator writes the datanodes to decommission into the namenode state ConfigMap,
# which the kubelet updates in the mounted EXCLUDE_FILE (dfs.hosts.exclude) within about
# a minute. A namenode reads that file only at start and on `dfsadmin -refreshNodes`, so
# this loop asks its own namenode to re-read it whenever the file's content changes, and
# once at start (the namenode may have started before the last change arrived).
#
# The operator writes the journalnodes that take no edits (restarted ones, until the
# next segment) into ROLL_EDITS_FILE, one host:port a line, and its roll waits for them.
# Once every one of them answers on its port, this loop runs `dfsadmin -rollEdits`;
# only the active namenode takes it (on the standby it fails, and the loop tries again
# at the next check). While the request stays, the loop starts another segment every
# ROLL_EDITS_SECONDS: a journalnode that was still starting missed the last one.
#
# The script is its container's PID 1, which ignores a SIGTERM it has no handler for:
# without the trap, every namenode pod deletion would wait the whole grace period. The
# wait between checks is a background sleep, so the trap runs at once; a running
# `dfsadmin` call finishes first (the runtime signals PID 1 only).
#
# Inputs (environment): EXCLUDE_FILE; ROLL_EDITS_FILE (optional); RPC_ADDRESS (default
# 127.0.0.1:8020, the namenode in this pod, active or standby: both take the list);
# CHECK_SECONDS (default 10); ROLL_EDITS_SECONDS (default 30).

set -uo pipefail

readonly SCRIPT=refresh-nodes
: "${EXCLUDE_FILE:?EXCLUDE_FILE must name the exclude list}"
RPC_ADDRESS=${RPC_ADDRESS:-127.0.0.1:8020}
CHECK_SECONDS=${CHECK_SECONDS:-10}
ROLL_EDITS_SECONDS=${ROLL_EDITS_SECONDS:-30}

log() {
    printf '%s: %s\n' "$SCRIPT" "$*"
}

fingerprint() {
    cksum <"$1" 2>/dev/null || echo missing
}

# answers HOST:PORT: something listens there, within 2 seconds.
answers() {
    timeout 2 bash -c "exec 3<>/dev/tcp/${1%:*}/${1##*:}" 2>/dev/null
}

# roll_edits_if_asked: a new edit log segment when the operator asks for one and every
# journalnode it names answers; again every ROLL_EDITS_SECONDS while it asks.
roll_edits_if_asked() {
    [[ -n ${ROLL_EDITS_FILE:-} ]] || return 0
    local requested address
    requested=$(cat "$ROLL_EDITS_FILE" 2>/dev/null || true)
    if [[ -z $requested ]]; then
        rolled_for=""
        return 0
    fi
    if [[ $requested == "$rolled_for" ]] && ((SECONDS - rolled_at < ROLL_EDITS_SECONDS)); then
        return 0
    fi
    for address in $requested; do
        if ! answers "$address"; then
            log "waiting for journalnode $address to answer before a new edit log segment"
            return 0
        fi
    done
    if hdfs dfsadmin -fs "hdfs://$RPC_ADDRESS" -rollEdits; then
        log "started a new edit log segment, so that journalnode(s) ${requested//$'\n'/ } take edits again"
        rolled_for=$requested
        rolled_at=$SECONDS
    else
        log "rollEdits failed (this namenode may be the standby); retrying in ${CHECK_SECONDS}s"
    fi
}

trap 'log "stopping on request"; exit 0' TERM INT

applied=""
rolled_for=""
rolled_at=0
while true; do
    roll_edits_if_asked
    current=$(fingerprint "$EXCLUDE_FILE")
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
