#!/usr/bin/env bash
# The Trino container's entry point: turns the catalog values that are lists into the
# comma-separated form Trino reads, then execs its arguments (the launcher), so the JVM
# is the container's process and gets its signals.
#
# A Hive metastore list read from a discovery ConfigMap may hold one URI per line, as
# the metastore operators publish several. Trino splits `hive.metastore.uri` on commas
# and reads each part with URI.create, which refuses a line break, so every pod of the
# cluster would exit at start. STRATA_COMMA_LISTS names the variables (space-separated)
# whose value is such a list: every run of commas and whitespace becomes one comma,
# and a leading or trailing one goes.

set -euo pipefail

for variable in ${STRATA_COMMA_LISTS:-}; do
    IFS=$' \t\r\n,' read -r -d '' -a parts <<<"${!variable:-}" || true
    joined=$(IFS=,; printf '%s' "${parts[*]}")
    export "$variable=$joined"
done

exec "$@"
