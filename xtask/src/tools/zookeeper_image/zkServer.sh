#!/usr/bin/env bash
# Stand-in for the `bin/zkServer.sh` of the docker.io/library/zookeeper:3.9.5 image,
# which no registry ships (it comes only with the release tarball). It keeps the
# command line and what `zkEnv.sh` and `zkServer.sh` 3.9 give the JVM: the
# configuration directory first on the class path (logback.xml is found there), the
# jars of lib/, -Xmx from ZK_SERVER_HEAP, SERVER_JVMFLAGS, the log directory and file
# properties, JMX local only, and `exec`, so a signal reaches the JVM. Only the
# subcommands the operators run are kept; the others are refused by name.
set -euo pipefail

ZOOBINDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ZOOKEEPER_PREFIX=$(cd "$ZOOBINDIR/.." && pwd)
ZOOCFGDIR=${ZOOCFGDIR:-$ZOOKEEPER_PREFIX/conf}
if [[ -f $ZOOCFGDIR/zookeeper-env.sh ]]; then
  # shellcheck disable=SC1091 # the user's own environment file, as zkEnv.sh sources it
  . "$ZOOCFGDIR/zookeeper-env.sh"
fi
ZOOCFG=${ZOOCFG:-zoo.cfg}
ZOO_LOG_DIR=${ZOO_LOG_DIR:-$ZOOKEEPER_PREFIX/logs}
ZOO_LOG_FILE=${ZOO_LOG_FILE:-zookeeper-${USER:-zookeeper}-server-${HOSTNAME:-localhost}.log}
ZK_SERVER_HEAP=${ZK_SERVER_HEAP:-1000}
JAVA=java
if [[ -n ${JAVA_HOME:-} ]]; then
  JAVA=$JAVA_HOME/bin/java
fi
CLASSPATH="$ZOOCFGDIR:$ZOOKEEPER_PREFIX/lib/*${CLASSPATH:+:$CLASSPATH}"

case "${1:-}" in
  start-foreground)
    # shellcheck disable=SC2086 # the *FLAGS variables are word lists, as in zkServer.sh
    exec "$JAVA" "-Dzookeeper.log.dir=$ZOO_LOG_DIR" "-Dzookeeper.log.file=$ZOO_LOG_FILE" \
      -XX:+HeapDumpOnOutOfMemoryError "-XX:OnOutOfMemoryError=kill -9 %p" \
      -cp "$CLASSPATH" "-Xmx${ZK_SERVER_HEAP}m" ${SERVER_JVMFLAGS:-} ${JVMFLAGS:-} \
      -Dcom.sun.management.jmxremote -Dcom.sun.management.jmxremote.local.only=false \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZOOCFGDIR/$ZOOCFG" ;;
  version)
    exec "$JAVA" -cp "$CLASSPATH" org.apache.zookeeper.version.VersionInfoMain ;;
  *)
    echo "zkServer.sh: the strata stand-in runs start-foreground and version only, not '${1:-}'" >&2
    exit 1 ;;
esac
