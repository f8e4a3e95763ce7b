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
# In a new file system, once its namenode is active, the loop creates what clients
# expect to find: /tmp, world-writable with the sticky bit (1777), and /user (755), each
# only when it is missing, so a mode an administrator set later stays. It asks the
# namenode's own /isActive first (no JVM), so a standby costs nothing.
#
# The script is its container's PID 1, which ignores a SIGTERM it has no handler for:
# without the trap, every namenode pod deletion would wait the whole grace period. The
# wait between checks is a background sleep, so the trap runs at once; a running
# `dfsadmin` call finishes first (the runtime signals PID 1 only).
#
# Inputs (environment): EXCLUDE_FILE; ROLL_EDITS_FILE (optional); RPC_ADDRESS (default
# 127.0.0.1:8020, the namenode in this pod, active or standby: both take the list);
# HTTP_ADDRESS (default 127.0.0.1:9870, its HTTP server); CHECK_SECONDS (default 10);
# ROLL_EDITS_SECONDS (default 30).

set -uo pipefail

readonly SCRIPT=refresh-nodes
: "${EXCLUDE_FILE:?EXCLUDE_FILE must name the exclude list}"
RPC_ADDRESS=${RPC_ADDRESS:-127.0.0.1:8020}
HTTP_ADDRESS=${HTTP_ADDRESS:-127.0.0.1:9870}
CHECK_SECONDS=${CHECK_SECONDS:-10}
ROLL_EDITS_SECONDS=${ROLL_EDITS_SECONDS:-30}

log() {
    printf '%s: %s\n' "$SCRIPT" "$*"
}

fingerprint() {
    cksum <"$1" 2>/dev/null || echo missing
}

# answers HOST:PORT: something listens there, within 2 seconds. The host and port
# reach the inner shell as its arguments, never as code: they come from a ConfigMap.
answers() {
    timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' answers "${1%:*}" "${1##*:}" 2>/dev/null
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

# is_active: this pod's namenode answers /isActive with 200 (a standby answers 405).
# The request runs in a child bash, bounded by 5 s: a connection the namenode closes
# early would otherwise end this script with SIGPIPE.
is_active() {
    local status
    # shellcheck disable=SC2016 # expanded by the child bash
    status=$(timeout 5 bash -c '
        exec 3<>"/dev/tcp/$1/$2" || exit 1
        printf "GET /isActive HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3
        IFS= read -r line <&3
        printf "%s" "$line"' is-active "${HTTP_ADDRESS%:*}" "${HTTP_ADDRESS##*:}" 2>/dev/null) ||
        return 1
    [[ $status == "HTTP/1."[01]" 200"* ]]
}

# ensure_directory PATH MODE: creates PATH with MODE when it is missing. Fails when the
# namenode cannot tell (safe mode, a failover), to be tried again; a directory created
# but not yet given its mode (`created_without_mode`) gets it at the next try.
ensure_directory() {
    local answer
    if [[ $created_without_mode != "$1" ]]; then
        if answer=$(hdfs dfs -fs "hdfs://$RPC_ADDRESS" -ls -d "$1" 2>&1); then
            return 0
        fi
        # Only Hadoop's own word for a missing path creates it.
        [[ $answer == *"No such file or directory"* ]] || return 1
        hdfs dfs -fs "hdfs://$RPC_ADDRESS" -mkdir -p "$1" || return 1
        created_without_mode=$1
    fi
    hdfs dfs -fs "hdfs://$RPC_ADDRESS" -chmod "$2" "$1" || return 1
    created_without_mode=""
    log "created $1 (mode $2)"
}

# base_directories_once: /tmp and /user, once, by the active namenode's sidecar.
base_directories_once() {
    [[ $base_directories == present ]] && return 0
    is_active || return 0
    if ensure_directory /tmp 1777 && ensure_directory /user 755; then
        base_directories=present
    else
        log "cannot check /tmp and /user yet (safe mode?); retrying in ${CHECK_SECONDS}s"
    fi
}

trap 'log "stopping on request"; exit 0' TERM INT

applied=""
rolled_for=""
rolled_at=0
base_directories=""
created_without_mode=""
while true; do
    roll_edits_if_asked
    base_directories_once
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
