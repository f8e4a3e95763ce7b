#!/usr/bin/env bash
# The namenode's init container: leaves NAME_DIR holding this cluster's namespace, or stops.
#
# Inputs (environment):
#   NAME_DIR          the namenode name dir, a subdirectory of a mounted volume (may not exist yet)
#   POD_NAME          this pod's name
#   FORMATTER_POD     the one pod allowed to format a new namespace
#   CLUSTER_ID_FILE   holds the cluster ID recorded in the cluster's status; absent or empty if none
#   NEW_CLUSTER_ID    the cluster ID a new namespace gets (-format -clusterid): CID-<HdfsCluster uid>
#   JOURNAL_NODES     the journalnodes' host names, space-separated, for messages
#   TERMINATION_LOG   default /dev/termination-log
#   RETRY_SECONDS     default 10
#   FORMAT_ATTEMPTS   default 30: failed formats before stopping with FormatFailed
#   BOOTSTRAP_ATTEMPTS default 30: unexpected bootstrapStandby codes before BootstrapFailed
#
# "Formatted" means $NAME_DIR/current/VERSION exists. Decisions, in order:
#   0. Formatted without an fsimage, with this cluster's ID (the recorded one, or
#      NEW_CLUSTER_ID while none is recorded): an interrupted format or bootstrap of this
#      cluster. Nothing in it was ever served (a namenode needs an fsimage to start), so
#      its content is removed and the empty-dir steps below run.
#   1. Formatted: PartialFormat without an fsimage (another cluster's ID), ClusterIdMismatch
#      against a known ID, else done. No hdfs call.
#   2. Not formatted but not empty: UnknownNameDirContent. Nothing is written over it.
#   3. Empty, cluster ID known: never format; bootstrap from a namenode, compare the ID.
#   4. Empty, no ID, not the formatter: bootstrap (waits for the formatter).
#   5. Empty, no ID, the formatter: bootstrap once (another namenode may hold the namespace
#      when the status was lost), else format; before each format retry, bootstrap again.
#
# Exit codes of hdfs (Hadoop 3.4):
#   namenode -bootstrapStandby -nonInteractive: 0 ok, 2 no namenode reachable,
#     3 layout mismatch, 5 already formatted, 6 edit logs unavailable.
#   namenode -format -nonInteractive -clusterid ID: 0 formatted, 1 data exists OR any
#     exception (a journalnode down): ambiguous. Never -force; dfs.reformat.disabled=true
#     as well. It writes current/VERSION, then formats every journal, then saves the
#     fsimage (FSImage.format), so a failure in between leaves VERSION without an fsimage:
#     step 0 removes it before the next attempt.
#
# Three decisions beyond a plain reading of those codes, from BootstrapStandby's source:
#   - bootstrapStandby dereferences the other namenode's address unchecked, so a peer name
#     that does not resolve (a pod without an IP: Pending, or being recreated, has no DNS
#     record) ends in a NullPointerException, exit 1. That is "no namenode reachable yet",
#     so it is treated as exit 2, and so is an UnknownHostException.
#   - bootstrapStandby writes current/VERSION *before* it checks the edit logs and downloads
#     the fsimage, so exit 6 (and an exception during the download) leaves VERSION without an
#     fsimage; the next attempt would answer 5 and look like an interrupted format. When the
#     name dir was empty before the call and holds no fsimage after it, this script removes
#     what that call wrote, then retries. Nothing that held an fsimage is ever removed.
#   - On the formatter, exit 6 means a namenode answered with a namespace: formatting would
#     create a second namespace, so the formatter waits to bootstrap instead (as in step 4).
#
# "Stop with reason R": $TERMINATION_LOG gets two lines, R and a one-sentence message; the
# message also goes to stderr; exit 1. The operator reports the pod's
# lastState.terminated.message as Degraded with reason R.

set -euo pipefail
shopt -s nullglob dotglob

# The script is its container's PID 1, which ignores a SIGTERM it has no handler for: the
# trap ends its waits between attempts at once, so a pod deletion does not wait the whole
# grace period. A running `hdfs` call (a format among them) is not interrupted, because
# the runtime signals PID 1 only; the trap runs when it returns.
trap 'log "stopping on request"; exit 143' TERM INT

readonly SCRIPT=format-namenode
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

for required in NAME_DIR POD_NAME FORMATTER_POD NEW_CLUSTER_ID; do
    if [[ -z ${!required:-} ]]; then
        stop InvalidEnvironment "The environment variable $required is not set."
    fi
done
if [[ $NAME_DIR != /?* ]]; then
    stop InvalidEnvironment "NAME_DIR must be an absolute path below a mounted volume, got '$NAME_DIR'."
fi
RETRY_SECONDS=${RETRY_SECONDS:-10}
FORMAT_ATTEMPTS=${FORMAT_ATTEMPTS:-30}
BOOTSTRAP_ATTEMPTS=${BOOTSTRAP_ATTEMPTS:-30}
require_count RETRY_SECONDS "$RETRY_SECONDS" 0
require_count FORMAT_ATTEMPTS "$FORMAT_ATTEMPTS" 1
require_count BOOTSTRAP_ATTEMPTS "$BOOTSTRAP_ATTEMPTS" 1

readonly VERSION_FILE=$NAME_DIR/current/VERSION

KNOWN_CLUSTER_ID=
if [[ -n ${CLUSTER_ID_FILE:-} && -e $CLUSTER_ID_FILE ]]; then
    KNOWN_CLUSTER_ID=$(tr -d '[:space:]' <"$CLUSTER_ID_FILE") ||
        stop InvalidEnvironment "Cannot read the cluster ID file $CLUSTER_ID_FILE."
fi
readonly KNOWN_CLUSTER_ID

is_formatted() {
    [[ -f $VERSION_FILE ]]
}

# The ID a namespace of this cluster has: the recorded one, else the one a format gives.
own_cluster_id() {
    printf '%s' "${KNOWN_CLUSTER_ID:-$NEW_CLUSTER_ID}"
}

# An fsimage_<txid> file (not its .md5) in current/.
has_fsimage() {
    local file
    for file in "$NAME_DIR"/current/fsimage_*; do
        if [[ ${file##*/} =~ ^fsimage_[0-9]+$ ]]; then
            return 0
        fi
    done
    return 1
}

# The name dir is absent, or a directory without entries.
is_empty() {
    if [[ ! -e $NAME_DIR && ! -L $NAME_DIR ]]; then
        return 0
    fi
    [[ -d $NAME_DIR ]] || return 1
    local entries=("$NAME_DIR"/*)
    ((${#entries[@]} == 0))
}

# The clusterID= value of current/VERSION, empty if it has none.
version_cluster_id() {
    if [[ ! -r $VERSION_FILE ]]; then
        printf 'unreadable'
        return 0
    fi
    local line
    while IFS= read -r line || [[ -n $line ]]; do
        line=${line%$'\r'}
        if [[ $line == clusterID=* ]]; then
            printf '%s' "${line#clusterID=}"
            return 0
        fi
    done <"$VERSION_FILE"
}

# At most five entry names of the name dir, for a message.
describe_entries() {
    if [[ ! -d $NAME_DIR ]]; then
        printf 'it is not a directory'
        return 0
    fi
    local entries=("$NAME_DIR"/*) names='' entry
    for entry in "${entries[@]:0:5}"; do
        names+="${names:+, }${entry##*/}"
    done
    printf 'it holds %s' "$names"
    if ((${#entries[@]} > 5)); then
        printf ' and %d more' $((${#entries[@]} - 5))
    fi
}

# Step 0: VERSION of this cluster without an fsimage, which an interrupted format or
# bootstrap of this cluster left.
is_own_interrupted_start() {
    is_formatted && ! has_fsimage && [[ $(version_cluster_id) == "$(own_cluster_id)" ]]
}

# Removes what an interrupted format or bootstrap of this cluster wrote (step 0 only).
clear_interrupted_start() {
    log "the name dir $NAME_DIR has current/VERSION of this cluster (cluster ID $(own_cluster_id)) but no fsimage: an interrupted format or bootstrap, which no namenode ever served; removing it to start again"
    if ! find "$NAME_DIR" -mindepth 1 -delete; then
        stop NameDirNotWritable "The name dir $NAME_DIR holds an interrupted format or bootstrap of this cluster (current/VERSION without an fsimage), which this pod cannot remove: make the volume writable by the pod's user (uid $(id -u)), or remove the directory's content."
    fi
}

# Step 1: the name dir holds a VERSION. Exits.
conclude_formatted() {
    local found
    found=$(version_cluster_id)
    if ! has_fsimage; then
        stop PartialFormat "The name dir $NAME_DIR has current/VERSION of cluster ID ${found:-none}, not this cluster's $(own_cluster_id), and no fsimage: an interrupted format or bootstrap of another namespace (a former cluster of this name?), left untouched. Inspect it and move it aside; this pod then bootstraps from a namenode of this cluster, or the formatter formats a new namespace."
    fi
    if [[ -n $KNOWN_CLUSTER_ID && $found != "$KNOWN_CLUSTER_ID" ]]; then
        stop ClusterIdMismatch "The name dir $NAME_DIR holds cluster ID ${found:-none} but the cluster's status records $KNOWN_CLUSTER_ID, so this volume belongs to another namespace and was left untouched: restore the right volume, or move the directory aside so this pod bootstraps from a namenode of $KNOWN_CLUSTER_ID."
    fi
    log "the name dir $NAME_DIR is formatted (cluster ID ${found:-none}, fsimage present); starting the namenode without any hdfs call"
    exit 0
}

# bootstrapStandby exited 0. Exits.
conclude_bootstrapped() {
    if ! is_formatted; then
        stop BootstrapFailed "hdfs namenode -bootstrapStandby exited 0 but left no current/VERSION in $NAME_DIR: check that dfs.namenode.name.dir is $NAME_DIR."
    fi
    local found
    found=$(version_cluster_id)
    if [[ -n $KNOWN_CLUSTER_ID && $found != "$KNOWN_CLUSTER_ID" ]]; then
        stop ClusterIdMismatch "bootstrapStandby copied cluster ID ${found:-none} from the namenode it reached, but the cluster's status records $KNOWN_CLUSTER_ID: the running namenodes serve another namespace, so check which volumes belong to this cluster before anything starts."
    fi
    log "bootstrapStandby copied the namespace (cluster ID ${found:-none}) into $NAME_DIR"
    conclude_formatted
}

# bootstrapStandby exited 5 (data already present). Exits.
conclude_already_formatted() {
    if is_formatted; then
        log "bootstrapStandby found $NAME_DIR already formatted; checking it"
        conclude_formatted
    fi
    if ! is_empty; then
        stop UnknownNameDirContent "The name dir $NAME_DIR gained content without current/VERSION while bootstrapping ($(describe_entries)): inspect it and move it aside so this pod can bootstrap."
    fi
    stop BootstrapFailed "hdfs namenode -bootstrapStandby reports data already present although $NAME_DIR is empty: check that dfs.namenode.name.dir and dfs.namenode.edits.dir name only $NAME_DIR."
}

stop_layout_mismatch() {
    stop LayoutMismatch "The namenode reached by bootstrapStandby has another HDFS layout version than this pod's Hadoop (exit code 3): run the same Hadoop version on every namenode, or finish the upgrade before adding namenodes."
}

# One bootstrapStandby call on an empty name dir; its exit code is left in BOOTSTRAP_CODE.
# On failure, removes a VERSION it wrote without an fsimage (see the header).
bootstrap_once() {
    BOOTSTRAP_CODE=0
    local output
    output=$(mktemp)
    hdfs namenode -bootstrapStandby -nonInteractive 2>&1 | tee "$output" || BOOTSTRAP_CODE=${PIPESTATUS[0]}
    if ((BOOTSTRAP_CODE == 1)) && grep -qE 'java\.lang\.NullPointerException|java\.net\.UnknownHostException' "$output"; then
        log "bootstrapStandby exited 1 on a name that does not resolve (a namenode or journalnode pod without an IP yet); taking it as no namenode reachable (exit 2)"
        BOOTSTRAP_CODE=2
    fi
    rm -f "$output"
    if ((BOOTSTRAP_CODE != 0 && BOOTSTRAP_CODE != 5)) && ! is_empty && ! has_fsimage; then
        log "bootstrapStandby exited $BOOTSTRAP_CODE after writing to the empty name dir $NAME_DIR without an fsimage; removing what it wrote so the next attempt starts clean"
        find "$NAME_DIR" -mindepth 1 -delete
    fi
}

# Steps 3 and 4: bootstrap until a namenode serves the namespace. Exits.
wait_for_bootstrap() {
    local unexpected=0
    while true; do
        bootstrap_once
        case $BOOTSTRAP_CODE in
        0) conclude_bootstrapped ;;
        5) conclude_already_formatted ;;
        2) log "waiting $RETRY_SECONDS s: no namenode is reachable to bootstrap from (exit 2)" ;;
        6) log "waiting $RETRY_SECONDS s: a namenode answered but the edit logs are unavailable (exit 6)" ;;
        3) stop_layout_mismatch ;;
        *)
            unexpected=$((unexpected + 1))
            if ((unexpected >= BOOTSTRAP_ATTEMPTS)); then
                stop BootstrapFailed "hdfs namenode -bootstrapStandby exited with unexpected codes $unexpected times (last $BOOTSTRAP_CODE): see this init container's log."
            fi
            log "bootstrapStandby exited $BOOTSTRAP_CODE unexpectedly ($unexpected of $BOOTSTRAP_ATTEMPTS); retrying in $RETRY_SECONDS s"
            ;;
        esac
        sleep "$RETRY_SECONDS" &
        wait $!
    done
}

# Step 5: the formatter pod with an empty name dir and no known cluster ID. Exits.
format_new_namespace() {
    local failures=0 code
    while true; do
        bootstrap_once
        case $BOOTSTRAP_CODE in
        0) conclude_bootstrapped ;;
        5) conclude_already_formatted ;;
        3) stop_layout_mismatch ;;
        6)
            log "a namenode answered bootstrapStandby, so a namespace exists but its edit logs are unavailable (exit 6); not formatting, waiting $RETRY_SECONDS s to bootstrap instead"
            sleep "$RETRY_SECONDS" &
            wait $!
            wait_for_bootstrap
            ;;
        *) log "bootstrapStandby exited $BOOTSTRAP_CODE: no namenode holds a namespace; formatting a new one in $NAME_DIR" ;;
        esac

        code=0
        hdfs namenode -format -nonInteractive -clusterid "$NEW_CLUSTER_ID" || code=$?
        if ((code == 0)); then
            if ! is_formatted || ! has_fsimage; then
                stop FormatFailed "hdfs namenode -format exited 0 but $NAME_DIR has no current/VERSION with an fsimage: check that dfs.namenode.name.dir is $NAME_DIR."
            fi
            log "formatted a new namespace (cluster ID $(version_cluster_id)) in $NAME_DIR"
            exit 0
        fi
        if is_own_interrupted_start; then
            clear_interrupted_start
        elif is_formatted; then
            log "hdfs namenode -format exited $code and $NAME_DIR now has current/VERSION; checking it"
            conclude_formatted
        fi
        failures=$((failures + 1))
        if ((failures >= FORMAT_ATTEMPTS)); then
            stop FormatFailed "hdfs namenode -format of cluster ID $NEW_CLUSTER_ID failed on all $failures attempts (last exit code $code). Every journalnode (${JOURNAL_NODES:-see dfs.namenode.shared.edits.dir}) must be up and hold no namespace. If no namenode of this cluster ever started, an interrupted format may have formatted some journals: remove the nameservice's directory under /data/journal on each journalnode (it holds no edits yet) and this pod formats again. If a namenode holds the namespace, restore its cluster ID in the cluster's status instead."
        fi
        log "hdfs namenode -format exited $code ($failures of $FORMAT_ATTEMPTS): ambiguous, a journalnode may be down or the journalnodes may hold a namespace; retrying in $RETRY_SECONDS s, after another bootstrapStandby attempt"
        sleep "$RETRY_SECONDS" &
        wait $!
    done
}

if is_own_interrupted_start; then
    clear_interrupted_start
fi
if is_formatted; then
    conclude_formatted
fi
if ! is_empty; then
    stop UnknownNameDirContent "The name dir $NAME_DIR is not empty but has no current/VERSION ($(describe_entries)), so nothing is formatted or bootstrapped over it: inspect it and move it aside so this pod can bootstrap."
fi
if [[ -n $KNOWN_CLUSTER_ID ]]; then
    log "the name dir $NAME_DIR is empty and the cluster's status records cluster ID $KNOWN_CLUSTER_ID: never formatting, bootstrapping from a namenode"
    wait_for_bootstrap
fi
if [[ $POD_NAME != "$FORMATTER_POD" ]]; then
    log "the name dir $NAME_DIR is empty and no cluster ID is recorded: bootstrapping once the formatter $FORMATTER_POD serves the namespace"
    wait_for_bootstrap
fi
log "the name dir $NAME_DIR is empty, no cluster ID is recorded and this pod is the formatter: checking whether another namenode already holds a namespace"
format_new_namespace
