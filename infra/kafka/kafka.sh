#!/usr/bin/env bash
# Run a pinned, single-node Apache Kafka 4.x broker (KRaft, broker+controller) from Maven Central jars.
# No Docker needed: Java 17 and Maven are enough.
#
# Usage: infra/kafka/kafka.sh <command>
#   fetch     copy the broker jars listed in pom.xml into infra/kafka/libs (only when pom.xml changed;
#             `fetch --force` re-fetches)
#   start     fetch if needed, render server.properties, format storage once, start the broker in the
#             background and wait until it is ready; prints KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:<port> on
#             stdout (everything else goes to stderr). Already running: just reports.
#   start --secure   the same, secured (also KAFKA_SECURE=1): a SASL_SSL listener (SCRAM-SHA-512 over TLS 1.2+,
#             TLS 1.3 where both ends have it; the controller and inter-broker listeners over TLS too) with a
#             private CA made on the first start (openssl) in <data dir>/tls: ca.pem (what clients trust,
#             KAFKA_SSL_CAFILE), the broker's key and certificate (SAN 127.0.0.1 and localhost, re-issued
#             from the CA when it has expired or expires within a day),
#             the KRaft StandardAuthorizer (deny by default), the super user `admin` and one principal per
#             service and role (infra/kafka/acls.py), passwords generated on the first start into
#             <data dir>/credentials.env and <data dir>/passwords/<principal> (mode 600), and the ACLs of
#             the topic prefix CROUPIER_TOPIC_PREFIX (default none). Also prints KAFKA_SECURITY_PROTOCOL
#             (SASL_SSL), KAFKA_SASL_MECHANISM, KAFKA_SSL_CAFILE and KAFKA_CREDENTIALS_FILE. A data dir
#             formatted in one mode refuses the other (reset it or use another KAFKA_DATA_DIR).
#   acl [PREFIX]  secured broker only: add the ACLs of infra/kafka/acls.py for topic prefix PREFIX
#             (default CROUPIER_TOPIC_PREFIX) and group prefix CROUPIER_GROUP_PREFIX (default croupier);
#             idempotent, remembered in <data dir>/acls.applied
#   stop      SIGTERM the broker from the pid file, SIGKILL after KAFKA_STOP_TIMEOUT seconds
#   restart   stop + start
#   status    exit 0 and print KAFKA_BOOTSTRAP_SERVERS=... if running, exit 3 if not
#   reset     stop and delete the data directory
#   logs      print the tail of the broker log
#
# A cluster: `start --brokers N` (N >= 2; also KAFKA_BROKERS=N) starts N KRaft nodes on 127.0.0.1, each a
#   combined broker + controller (a static quorum of all N: fine on one machine, a real floor would run three
#   dedicated controllers), node i in <data dir>/node-<i> on port KAFKA_PORT + (i-1)*KAFKA_PORT_STEP (controller
#   KAFKA_CONTROLLER_PORT + (i-1)*KAFKA_PORT_STEP), one cluster id, replication factor min(3, N) and
#   min.insync.replicas 2 (1 for N = 2) for every topic created without a factor and every internal topic
#   (__consumer_offsets, __transaction_state, the share-coordinator state). The nodes start together (a node is
#   ready only once a quorum of controllers is up). Prints KAFKA_BOOTSTRAP_SERVERS with all N addresses.
#   `--secure` too: one CA, one broker certificate (SAN 127.0.0.1) and one set of principals shared by the nodes
#   (in <data dir>), the ACLs added once the cluster is up. The count is remembered in <data dir>/brokers:
#   stop, status, restart, reset and logs act on every node without --brokers; `--node I` (start, stop,
#   status, restart) acts on node I only (a chaos run restarting a killed node). One node (the default) is
#   exactly the single broker above.
#
# Environment (all optional):
#   KAFKA_DATA_DIR          data, logs, pid file, rendered config   (default <repo>/var/kafka)
#   KAFKA_PORT              client (PLAINTEXT) listener on 127.0.0.1 (default 19092)
#   KAFKA_CONTROLLER_PORT   KRaft controller listener on 127.0.0.1  (default 19093)
#   KAFKA_CLEAR_PORT        secured only: ALSO open a SASL_PLAINTEXT listener (no TLS) on 127.0.0.1 at this
#                           port, to measure what TLS costs against the same broker (default none; never
#                           on a floor: everything on it travels in clear)
#   KAFKA_TLS_DAYS          days the broker's certificate is valid when issued (default 365; the CA: 3650)
#   KAFKA_START_TIMEOUT     seconds to wait for readiness            (default 90; a cluster's nodes 240)
#   KAFKA_STOP_TIMEOUT      seconds between SIGTERM and SIGKILL      (default 30)
#   KAFKA_HEAP_OPTS         JVM heap flags                           (default "-Xms256m -Xmx1g")
#   KAFKA_JAVA_OPTS         extra JVM flags
#   KAFKA_MVN_ARGS          extra Maven arguments for `fetch` (e.g. -o, -s settings.xml)
#   KAFKA_SECURE            1: `start` starts the broker secured (same as --secure)
#   KAFKA_ACL_PYTHON        a Python with aiokafka for `acl` (default <repo>/.venv/bin/python): one CreateAcls
#                           request (infra/kafka/acl_apply.py); without one, AclCommand (a JVM per call)
#   KAFKA_BROKERS           nodes of a cluster (same as --brokers N; default: <data dir>/brokers, else 1)
#   KAFKA_PORT_STEP         port distance between consecutive nodes of a cluster (default 2)
#   CROUPIER_TOPIC_PREFIX   topic prefix whose ACLs `start --secure` and `acl` add (default none)
#   CROUPIER_GROUP_PREFIX   consumer-group / transactional-id prefix of those ACLs (default croupier)
#
# Passwords never appear on a command line: StorageTool reads the SCRAM credentials from an argument file
# (java @file), AclCommand the admin's from --command-config, both mode 600 in the data dir.
#
# The broker is only ever stopped through the pid in its pid file, after checking that this pid is the
# java process started with this data directory's server.properties; never by process name.
set -euo pipefail

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/../.." && pwd -P)"

POM="$SCRIPT_DIR/pom.xml"
TEMPLATE="$SCRIPT_DIR/server.properties.template"
SECURE_TEMPLATE="$SCRIPT_DIR/server.secure.properties.template"
ACLS_PY="$SCRIPT_DIR/acls.py"
LOG4J_CONFIG="$SCRIPT_DIR/log4j2.properties"
LIBS="$SCRIPT_DIR/libs"
STAMP="$LIBS/.pom.sha256"
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

KAFKA_PORT="${KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
KAFKA_CLEAR_PORT="${KAFKA_CLEAR_PORT:-}"
TLS_DAYS="${KAFKA_TLS_DAYS:-365}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g}"
EXTRA_JAVA_OPTS="${KAFKA_JAVA_OPTS:-}"
MVN_ARGS="${KAFKA_MVN_ARGS:-}"
SECURE="${KAFKA_SECURE:-0}"
TOPIC_PREFIX="${CROUPIER_TOPIC_PREFIX:-}"
GROUP_PREFIX="${CROUPIER_GROUP_PREFIX:-croupier}"

DATA_DIR="${KAFKA_DATA_DIR:-$REPO_ROOT/var/kafka}"
case "$DATA_DIR" in
  /*) ;;
  *) DATA_DIR="$PWD/$DATA_DIR" ;;
esac
DATA_DIR="${DATA_DIR%/}"

# A node of a cluster is this script run by the cluster's own invocation with these set (internal): its id,
# the quorum, the cluster's directory (cluster id, TLS, credentials, ACL stamp) and the replication factor.
NODE_ID="${KAFKA__NODE_ID:-1}"
QUORUM_VOTERS="${KAFKA__VOTERS:-1@127.0.0.1:$KAFKA_CONTROLLER_PORT}"
SHARED_DIR="${KAFKA__SHARED_DIR:-$DATA_DIR}"
REPLICATION="${KAFKA__REPLICATION:-1}"
BROKERS="${KAFKA_BROKERS:-}"
NODE=""
PORT_STEP="${KAFKA_PORT_STEP:-2}"
SCRIPT_PATH="$SCRIPT_DIR/$(basename -- "${BASH_SOURCE[0]}")"

PROPS="$DATA_DIR/server.properties"
PID_FILE="$DATA_DIR/kafka.pid"
CLUSTER_ID_FILE="$SHARED_DIR/cluster.id"
LOG_DIR="$DATA_DIR/logs"
PARTITION_DIR="$DATA_DIR/data"
SERVER_LOG="$LOG_DIR/server.log"
STDOUT_LOG="$LOG_DIR/kafka.out"
MARKER="$DATA_DIR/.croupier-kafka"
LOCK_FILE="$DATA_DIR/.lock"
MODE_FILE="$DATA_DIR/security.mode"
CREDENTIALS="$SHARED_DIR/credentials.env"
PASSWORD_DIR="$SHARED_DIR/passwords"
ADMIN_CONFIG="$SHARED_DIR/admin-client.properties"
ACLS_APPLIED="$SHARED_DIR/acls.applied"
TLS_DIR="$SHARED_DIR/tls"
CA_PEM="$TLS_DIR/ca.pem"
CA_KEY="$TLS_DIR/ca.key"
BROKER_PEM="$TLS_DIR/broker.pem"
BROKER_KEY="$TLS_DIR/broker.key"
KEYSTORE="$TLS_DIR/broker.p12"
KEYSTORE_PASSWORD="$TLS_DIR/keystore.password"
BOOTSTRAP="127.0.0.1:$KAFKA_PORT"
READY_LINE="Kafka Server started"

log() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

need() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' is not installed (needed: $2)"
}

check_int() {
  [[ "$2" =~ ^[0-9]+$ ]] || die "$1 must be an integer, got '$2'"
}
check_int KAFKA_PORT "$KAFKA_PORT"
check_int KAFKA_CONTROLLER_PORT "$KAFKA_CONTROLLER_PORT"
check_int KAFKA_START_TIMEOUT "$START_TIMEOUT"
check_int KAFKA_STOP_TIMEOUT "$STOP_TIMEOUT"
check_int KAFKA_TLS_DAYS "$TLS_DAYS"
check_int KAFKA_PORT_STEP "$PORT_STEP"
[[ "$KAFKA_PORT" != "$KAFKA_CONTROLLER_PORT" ]] || die "KAFKA_PORT and KAFKA_CONTROLLER_PORT must differ"
if [[ -n "$KAFKA_CLEAR_PORT" ]]; then
  check_int KAFKA_CLEAR_PORT "$KAFKA_CLEAR_PORT"
  [[ "$KAFKA_CLEAR_PORT" != "$KAFKA_PORT" && "$KAFKA_CLEAR_PORT" != "$KAFKA_CONTROLLER_PORT" ]] \
    || die "KAFKA_CLEAR_PORT must differ from KAFKA_PORT and KAFKA_CONTROLLER_PORT"
fi

# Serialise start/stop/reset on one data directory. fd 9 is closed for the broker process itself.
take_lock() {
  mkdir -p "$DATA_DIR"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$LOCK_FILE"
    flock -w 180 9 || die "another kafka.sh holds $LOCK_FILE"
  fi
}

# ---------------------------------------------------------------------------------------------- process

# Prints the command line of a live (non-zombie) process, or fails.
proc_cmdline() {
  local pid="$1" cmd
  kill -0 "$pid" 2>/dev/null || return 1
  if [[ -r "/proc/$pid/cmdline" ]]; then
    cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  else
    cmd="$(ps -ww -o args= -p "$pid" 2>/dev/null)" || return 1
  fi
  [[ -n "$cmd" ]] || return 1 # zombie
  printf '%s\n' "$cmd"
}

# Is $1 a live, non-zombie process? (Used for the child just forked by `start`: until the forked shell has
# exec'd java its command line is still this script's, so is_our_broker would wrongly say no.)
pid_alive() {
  local st
  kill -0 "$1" 2>/dev/null || return 1
  st="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
  [[ -n "$st" && "$st" != Z* ]]
}

# Is $1 the broker of this data directory (and not some other process that reused the pid)?
is_our_broker() {
  local cmd
  cmd="$(proc_cmdline "$1")" || return 1
  [[ "$cmd" == *java* && "$cmd" == *kafka.Kafka* && "$cmd" == *"$PROPS"* ]]
}

# Prints the pid of the running broker, or fails.
running_pid() {
  local pid
  [[ -f "$PID_FILE" ]] || return 1
  pid="$(<"$PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  is_our_broker "$pid" || return 1
  printf '%s\n' "$pid"
}

port_open() {
  if command -v timeout >/dev/null 2>&1; then
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}

print_tail() {
  local f
  for f in "$SERVER_LOG" "$STDOUT_LOG"; do
    if [[ -s "$f" ]]; then
      log "---- last 60 lines of $f ----"
      tail -n 60 "$f" >&2 || true
    fi
  done
}

# ------------------------------------------------------------------------------------------------ fetch

pom_sum() { sha256sum "$POM" | cut -d' ' -f1; }

libs_fresh() {
  [[ -f "$STAMP" ]] || return 1
  [[ "$(<"$STAMP")" == "$(pom_sum)" ]] || return 1
  compgen -G "$LIBS/kafka_2.13-*.jar" >/dev/null
}

cmd_fetch() {
  if [[ "${1:-}" != "--force" ]] && libs_fresh; then
    log "broker jars up to date in $LIBS"
    return 0
  fi
  need mvn "fetching the broker jars from Maven Central"
  need sha256sum "the pom checksum stamp"
  if running_pid >/dev/null; then
    log "warning: the broker is running; it keeps using the jars it loaded until restarted"
  fi
  local tmp t0 n
  tmp="$(mktemp -d "$SCRIPT_DIR/.libs.tmp.XXXXXX")"
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  t0=$SECONDS
  log "fetching broker jars (pom sha256 $(pom_sum | cut -c1-12)) with $DEP_PLUGIN ..."
  # shellcheck disable=SC2086
  if ! mvn -B -q -Dstyle.color=never -f "$POM" $MVN_ARGS "$DEP_PLUGIN:copy-dependencies" \
      -DoutputDirectory="$tmp" -DincludeScope=runtime >"$tmp/.mvn.log" 2>&1; then
    cat "$tmp/.mvn.log" >&2
    die "maven could not fetch the broker jars (see the output above)"
  fi
  rm -f "$tmp/.mvn.log"
  compgen -G "$tmp/kafka_2.13-*.jar" >/dev/null || die "kafka_2.13 jar missing after the fetch"
  pom_sum >"$tmp/.pom.sha256"
  rm -rf "$LIBS"
  mv "$tmp" "$LIBS"
  trap - EXIT
  n="$(compgen -G "$LIBS/*.jar" | wc -l)"
  log "fetched $n jars into $LIBS in $((SECONDS - t0)) s"
}

# ------------------------------------------------------------------------------------------------ start

render_config() {
  local t
  t="$(<"$TEMPLATE")"
  t="${t//@BROKER_PORT@/"$KAFKA_PORT"}"
  t="${t//@CONTROLLER_PORT@/"$KAFKA_CONTROLLER_PORT"}"
  t="${t//@LOG_DIRS@/"$PARTITION_DIR"}"
  t="${t//@NODE_ID@/"$NODE_ID"}"
  t="${t//@VOTERS@/"$QUORUM_VOTERS"}"
  t="${t//@REPLICATION@/"$REPLICATION"}"
  t="${t//@MIN_ISR@/"$(min_isr "$REPLICATION")"}"
  if ((REPLICATION > 1)); then
    t="${t//@BROKER_SESSION_MS@/2000}"; t="${t//@BROKER_HEARTBEAT_MS@/250}"
  else
    t="${t//@BROKER_SESSION_MS@/9000}"; t="${t//@BROKER_HEARTBEAT_MS@/2000}"
  fi
  if [[ "$SECURE" == 1 ]]; then
    local s
    s="$(<"$SECURE_TEMPLATE")"
    s="${s//@BROKER_PORT@/"$KAFKA_PORT"}"
    s="${s//@CONTROLLER_PORT@/"$KAFKA_CONTROLLER_PORT"}"
    s="${s//@ADMIN_PASSWORD@/"$(password_of admin)"}"
    s="${s//@KEYSTORE@/"$KEYSTORE"}"
    s="${s//@KEYSTORE_PASSWORD@/"$(<"$KEYSTORE_PASSWORD")"}"
    s="${s//@CA_PEM@/"$CA_PEM"}"
    t="$t"$'\n'"$s"
    if [[ -n "$KAFKA_CLEAR_PORT" ]]; then
      # the measuring listener: SASL_PLAINTEXT beside the TLS one (later keys override the template's)
      t="$t"$'\n'"# KAFKA_CLEAR_PORT: a SASL_PLAINTEXT listener beside SASL_SSL, to measure what TLS costs. Not for a floor."
      t="$t"$'\n'"listeners=SASL_SSL://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,CLEAR://127.0.0.1:$KAFKA_CLEAR_PORT"
      t="$t"$'\n'"advertised.listeners=SASL_SSL://127.0.0.1:$KAFKA_PORT,CLEAR://127.0.0.1:$KAFKA_CLEAR_PORT"
      t="$t"$'\n'"listener.security.protocol.map=CONTROLLER:SASL_SSL,SASL_SSL:SASL_SSL,CLEAR:SASL_PLAINTEXT"
      t="$t"$'\n'"listener.name.clear.sasl.enabled.mechanisms=SCRAM-SHA-512"
      t="$t"$'\n'"listener.name.clear.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"$(password_of admin)\";"
    fi
  fi
  ! [[ "$t" =~ @[A-Z_]+@ ]] || die "unrendered placeholder left in $TEMPLATE"
  (umask 077 && printf '%s\n' "$t" >"$PROPS.tmp")
  mv "$PROPS.tmp" "$PROPS"
}

# min.insync.replicas for replication factor $1: 1 for one copy, else 2 (one dead broker keeps acks=all going).
min_isr() {
  if (($1 >= 2)); then echo 2; else echo 1; fi
}

# ---------------------------------------------------------------------------------------------- secured

# The mode the storage was formatted in ("plain" or "secure"; a dir formatted before modes existed: plain).
formatted_mode() {
  if [[ -s "$MODE_FILE" ]]; then
    cat "$MODE_FILE"
  elif [[ -f "$PARTITION_DIR/meta.properties" ]]; then
    echo plain
  fi
}

check_mode() {
  local want have
  want="$([[ "$SECURE" == 1 ]] && echo secure || echo plain)"
  have="$(formatted_mode)"
  if [[ -n "$have" && "$have" != "$want" ]]; then
    die "$DATA_DIR was formatted for the $have broker, not $want; start it as before" \
      "($([[ "$have" == secure ]] && echo 'with --secure' || echo 'without --secure')), or use another" \
      "KAFKA_DATA_DIR, or \`kafka.sh reset\` it (deletes its data)"
  fi
}

password_of() {
  local f="$PASSWORD_DIR/$1"
  [[ -s "$f" ]] || die "no password for principal '$1' in $PASSWORD_DIR (reset the data dir to regenerate)"
  printf '%s' "$(<"$f")"
}

new_password() {
  local p
  p="$(head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | cut -c1-32)"
  [[ ${#p} -ge 24 ]] || die "could not generate a password"
  printf '%s' "$p"
}

# Generate the passwords of every principal (infra/kafka/acls.py), once, before the first format.
make_credentials() {
  need python3 "reading the principals from infra/kafka/acls.py"
  local names name upper
  mapfile -t names < <(python3 "$ACLS_PY" principals)
  ((${#names[@]} > 1)) || die "acls.py listed no principals"
  (
    umask 077
    mkdir -p "$PASSWORD_DIR"
    for name in "${names[@]}"; do
      [[ -s "$PASSWORD_DIR/$name" ]] || new_password >"$PASSWORD_DIR/$name"
    done
    {
      printf '# Croupier Kafka principals (SCRAM-SHA-512) of the broker in %s. Secret: mode 600.\n' "$DATA_DIR"
      printf '# One password file per principal in %s (for KAFKA_SASL_PASSWORD_FILE).\n' "$PASSWORD_DIR"
      printf 'KAFKA_BOOTSTRAP_SERVERS=%s\nKAFKA_SECURITY_PROTOCOL=SASL_SSL\nKAFKA_SASL_MECHANISM=SCRAM-SHA-512\n' \
        "$BOOTSTRAP"
      printf 'KAFKA_SSL_CAFILE=%s\n' "$CA_PEM"
      for name in "${names[@]}"; do
        upper="$(printf '%s' "$name" | tr 'a-z-' 'A-Z_')"
        printf 'CROUPIER_KAFKA_PASSWORD_%s=%s\n' "$upper" "$(<"$PASSWORD_DIR/$name")"
      done
    } >"$CREDENTIALS.tmp"
    mv "$CREDENTIALS.tmp" "$CREDENTIALS"
    printf 'security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nssl.truststore.type=PEM\nssl.truststore.location=%s\n' \
      "$CA_PEM" >"$ADMIN_CONFIG"
    printf 'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="%s";\n' \
      "$(<"$PASSWORD_DIR/admin")" >>"$ADMIN_CONFIG"
  )
  chmod 700 "$DATA_DIR"
}

# ---------------------------------------------------------------------------------------------------- TLS

# The floor's private CA and the broker's certificate, in <data dir>/tls (mode 700; keys and the keystore's
# password mode 600): made on the first secured start; the broker's certificate is issued again from the
# same CA (clients keep trusting ca.pem) when it is missing, no longer verifies against the CA, lacks the
# loopback names, or expires within a day. An expired CA cannot be renewed in place: reset the data dir.
make_tls() {
  need openssl "making the broker's TLS certificate"
  (umask 077 && mkdir -p "$TLS_DIR")
  if [[ ! -s "$CA_PEM" || ! -s "$CA_KEY" ]]; then
    log "making the floor's private CA in $TLS_DIR"
    (umask 077 && openssl req -x509 -new -newkey rsa:3072 -nodes -sha256 -days 3650 \
        -subj "/O=Croupier/CN=Croupier floor CA $(basename "$DATA_DIR")" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -keyout "$CA_KEY.tmp" -out "$CA_PEM.tmp" 2>"$TLS_DIR/openssl.err") \
      || { cat "$TLS_DIR/openssl.err" >&2; die "openssl could not make the CA"; }
    mv "$CA_KEY.tmp" "$CA_KEY" && mv "$CA_PEM.tmp" "$CA_PEM"
    chmod 644 "$CA_PEM"
    rm -f "$BROKER_PEM" "$KEYSTORE"
  fi
  openssl x509 -in "$CA_PEM" -noout -checkend 0 >/dev/null \
    || die "the CA certificate $CA_PEM has expired ($(openssl x509 -in "$CA_PEM" -noout -enddate)); reset the data dir"
  local why=""
  if [[ ! -s "$BROKER_PEM" || ! -s "$BROKER_KEY" || ! -s "$KEYSTORE" || ! -s "$KEYSTORE_PASSWORD" ]]; then
    why="none yet"
  elif ! openssl verify -CAfile "$CA_PEM" "$BROKER_PEM" >/dev/null 2>&1; then
    why="it does not verify against $CA_PEM"
  elif ! openssl x509 -in "$BROKER_PEM" -noout -checkend 86400 >/dev/null; then
    why="it expires within a day ($(openssl x509 -in "$BROKER_PEM" -noout -enddate))"
  elif ! openssl x509 -in "$BROKER_PEM" -noout -checkhost localhost >/dev/null 2>&1 \
      || ! openssl x509 -in "$BROKER_PEM" -noout -checkip 127.0.0.1 >/dev/null 2>&1; then
    why="it does not name localhost and 127.0.0.1"
  fi
  [[ -n "$why" ]] || return 0
  log "issuing the broker's certificate ($why), valid $TLS_DAYS days"
  local ext="$TLS_DIR/broker.ext"
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost" >"$ext"
  (
    umask 077
    [[ -s "$KEYSTORE_PASSWORD" ]] || new_password >"$KEYSTORE_PASSWORD"
    openssl req -new -newkey rsa:2048 -nodes -subj "/O=Croupier/CN=localhost" \
      -keyout "$BROKER_KEY" -out "$TLS_DIR/broker.csr" &&
      openssl x509 -req -in "$TLS_DIR/broker.csr" -CA "$CA_PEM" -CAkey "$CA_KEY" -CAcreateserial -sha256 \
        -days "$TLS_DAYS" -extfile "$ext" -out "$BROKER_PEM" &&
      openssl pkcs12 -export -in "$BROKER_PEM" -inkey "$BROKER_KEY" -certfile "$CA_PEM" -name broker \
        -passout "file:$KEYSTORE_PASSWORD" -out "$KEYSTORE"
  ) 2>"$TLS_DIR/openssl.err" || { cat "$TLS_DIR/openssl.err" >&2; die "openssl could not issue the broker's certificate"; }
  rm -f "$TLS_DIR/broker.csr" "$ext"
  chmod 644 "$BROKER_PEM"
}

# Java flags for the short-lived tools (AclCommand, StorageTool): a small heap, quick start-up.
tool_java_opts() {
  printf '%s\n' -Xmx192m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto
}

# acl_apply PREFIX: add the ACLs of acls.py for PREFIX (skipped when this policy was applied already).
# AclCommand is one JVM per call (about 1 s of CPU each): a class-data-sharing archive of the tool, made by
# the first call and kept with the jars, and two calls at a time keep this to a few seconds.
acl_apply() {
  local prefix="$1" stamp opts jopts t0=$SECONDS out calls=() i=0 failed=0
  [[ "$(formatted_mode)" == secure ]] || die "the broker in $DATA_DIR is not secured (start it with --secure)"
  [[ "$prefix" =~ ^[A-Za-z0-9._-]*$ ]] || die "topic prefix '$prefix' has characters Kafka topic names cannot have"
  [[ "$GROUP_PREFIX" =~ ^[A-Za-z0-9._-]+$ ]] || die "group prefix '$GROUP_PREFIX' is not a valid name"
  need python3 "reading the ACLs from infra/kafka/acls.py"
  stamp="$(cat "$ACLS_PY" "$REPO_ROOT/contracts/topics.py" | sha256sum | cut -c1-16) $GROUP_PREFIX $prefix"
  if [[ -f "$ACLS_APPLIED" ]] && grep -qxF -- "$stamp" "$ACLS_APPLIED"; then
    log "ACLs for topic prefix '$prefix' already in place"
    return 0
  fi
  # One CreateAcls request from a Python with aiokafka (the project's .venv, or KAFKA_ACL_PYTHON): well under a
  # second; else, or when it fails, AclCommand below (one JVM per call).
  local py="${KAFKA_ACL_PYTHON:-$REPO_ROOT/.venv/bin/python}"
  if [[ -x "$py" ]] && "$py" -c 'import aiokafka' 2>/dev/null; then
    if "$py" "$SCRIPT_DIR/acl_apply.py" "$BOOTSTRAP" "$CA_PEM" "$PASSWORD_DIR/admin" "$prefix" "$GROUP_PREFIX" \
        >&2; then
      printf '%s\n' "$stamp" >>"$ACLS_APPLIED"
      log "added the ACLs for topic prefix '$prefix' (one CreateAcls request, $((SECONDS - t0)) s)"
      return 0
    fi
    log "acl_apply.py failed: adding the ACLs with AclCommand instead"
  fi
  mapfile -t calls < <(python3 "$ACLS_PY" calls "$prefix" "$GROUP_PREFIX")
  ((${#calls[@]})) || die "acls.py produced no ACLs"
  # The tool logs apart from the broker's server.log.
  opts=("-Dlog4j2.configurationFile=$LOG4J_CONFIG" "-Dkafka.logs.dir=$LOG_DIR/tools" -Djava.awt.headless=true)
  mapfile -t jopts < <(tool_java_opts)
  out="$(mktemp -d "$DATA_DIR/.acl.XXXXXX")"
  local cds="$LIBS/.acl-tool.jsa"
  acl_call() { # acl_call INDEX CDS-FLAG ARGS...
    local idx="$1" flag="$2" args
    read -r -a args <<<"${calls[$idx]}"
    java "${jopts[@]}" "$flag" "${opts[@]}" -cp "$LIBS/*" org.apache.kafka.tools.AclCommand \
      --bootstrap-server "$BOOTSTRAP" --command-config "$ADMIN_CONFIG" "${args[@]}" >"$out/$idx.out" 2>&1 \
      || touch "$out/$idx.failed"
  }
  if [[ ! -s "$cds" ]]; then
    acl_call 0 "-XX:ArchiveClassesAtExit=$cds.$$.tmp"
    if [[ -s "$cds.$$.tmp" ]]; then mv -f "$cds.$$.tmp" "$cds"; else rm -f "$cds.$$.tmp"; fi
    i=1
  fi
  # Two at a time; wait only for these pids (the broker started by `start` is a job of this shell too).
  local pids=()
  for ((; i < ${#calls[@]}; i++)); do
    acl_call "$i" "-XX:SharedArchiveFile=$cds" &
    pids+=($!)
    if ((${#pids[@]} == 2)); then
      wait "${pids[@]}" || true
      pids=()
    fi
  done
  if ((${#pids[@]})); then wait "${pids[@]}" || true; fi
  for ((i = 0; i < ${#calls[@]}; i++)); do
    if [[ -e "$out/$i.failed" ]]; then
      cat "$out/$i.out" >&2
      log "AclCommand failed: ${calls[$i]}"
      failed=1
    fi
  done
  rm -rf "$out"
  ((failed == 0)) || die "adding the ACLs for topic prefix '$prefix' failed"
  printf '%s\n' "$stamp" >>"$ACLS_APPLIED"
  log "added the ACLs for topic prefix '$prefix' (${#calls[@]} AclCommand calls, $((SECONDS - t0)) s)"
}

cmd_acl() {
  local prefix="${1-$TOPIC_PREFIX}"
  running_pid >/dev/null || die "the broker in $DATA_DIR is not running"
  acl_apply "$prefix"
}

# A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (22 chars), not starting with '-'.
new_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ ${#id} -eq 22 && "$id" != -* ]] && break
  done
  printf '%s\n' "$id"
}

java_base_opts() {
  printf '%s\n' "-Dlog4j2.configurationFile=$LOG4J_CONFIG" "-Dkafka.logs.dir=$LOG_DIR" -Djava.awt.headless=true
}

format_storage_once() {
  if [[ -f "$PARTITION_DIR/meta.properties" ]]; then
    return 0
  fi
  local cid
  if [[ -s "$CLUSTER_ID_FILE" ]]; then
    cid="$(<"$CLUSTER_ID_FILE")"
  else
    cid="$(new_cluster_id)"
    printf '%s\n' "$cid" >"$CLUSTER_ID_FILE"
  fi
  log "formatting $PARTITION_DIR with cluster id $cid"
  local opts scram=()
  mapfile -t opts < <(java_base_opts)
  if [[ "$SECURE" == 1 ]]; then
    # The SCRAM credentials go into the metadata log at format time, through a mode-600 argument file
    # (java @file: the passwords never show in a process list). CLASSPATH, since -cp wildcards are not
    # expanded inside an argument file.
    local argfile="$DATA_DIR/.format.args" name
    (
      umask 077
      printf '%s\n' kafka.tools.StorageTool format -c "\"$PROPS\"" -t "$cid" --ignore-formatted >"$argfile"
      while read -r name; do
        printf -- '--add-scram\nSCRAM-SHA-512=[name=%s,password=%s]\n' "$name" "$(<"$PASSWORD_DIR/$name")"
      done < <(python3 "$ACLS_PY" principals) >>"$argfile"
    )
    scram=("@$argfile")
  else
    scram=(kafka.tools.StorageTool format -c "$PROPS" -t "$cid" --ignore-formatted)
  fi
  # Static controller.quorum.voters: no --standalone.
  if ! CLASSPATH="$LIBS/*" java -Xmx256m "${opts[@]}" "${scram[@]}" >"$LOG_DIR/format.out" 2>&1; then
    rm -f "$DATA_DIR/.format.args"
    cat "$LOG_DIR/format.out" >&2
    die "formatting the storage failed"
  fi
  rm -f "$DATA_DIR/.format.args"
  if [[ "$SECURE" == 1 ]]; then echo secure >"$MODE_FILE"; else echo plain >"$MODE_FILE"; fi
}

rotate_logs() {
  local f
  for f in "$SERVER_LOG" "$STDOUT_LOG"; do
    if [[ -e "$f" ]]; then
      mv -f "$f" "$f.prev"
    fi
  done
}

report_running() {
  log "running ($1), bootstrap servers $BOOTSTRAP, data in $DATA_DIR"
  printf 'KAFKA_BOOTSTRAP_SERVERS=%s\n' "$BOOTSTRAP"
  if [[ "$(formatted_mode)" == secure ]]; then
    printf 'KAFKA_SECURITY_PROTOCOL=SASL_SSL\nKAFKA_SASL_MECHANISM=SCRAM-SHA-512\nKAFKA_SSL_CAFILE=%s\n' "$CA_PEM"
    printf 'KAFKA_CREDENTIALS_FILE=%s\n' "$CREDENTIALS"
  fi
}

cmd_start() {
  take_lock
  [[ "$SECURE" == 0 || "$SECURE" == 1 ]] || die "KAFKA_SECURE must be 0 or 1, got '$SECURE'"
  check_mode
  local pid
  if pid="$(running_pid)"; then
    log "already running"
    report_running "pid $pid"
    return 0
  fi
  rm -f "$PID_FILE"
  local port
  for port in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT" ${KAFKA_CLEAR_PORT:+"$KAFKA_CLEAR_PORT"}; do
    if port_open "$port"; then
      die "127.0.0.1:$port is already in use by another process (not this data dir's broker);" \
        "set KAFKA_PORT / KAFKA_CONTROLLER_PORT or stop it"
    fi
  done

  need java "running the broker (Java 17+)"
  cmd_fetch
  mkdir -p "$LOG_DIR" "$PARTITION_DIR"
  touch "$MARKER"
  if [[ "$SECURE" == 1 && -z "${KAFKA__SHARED_DIR:-}" ]]; then # a cluster's node: the cluster made them
    make_credentials
    make_tls
  fi
  render_config
  format_storage_once
  rotate_logs

  local opts heap extra t0
  mapfile -t opts < <(java_base_opts)
  read -r -a heap <<<"$HEAP_OPTS"
  read -r -a extra <<<"$EXTRA_JAVA_OPTS"
  t0=$SECONDS
  log "starting the broker on $BOOTSTRAP (controller 127.0.0.1:$KAFKA_CONTROLLER_PORT), log $SERVER_LOG"
  nohup java "${heap[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 "${opts[@]}" ${extra[@]+"${extra[@]}"} \
    -cp "$LIBS/*" kafka.Kafka "$PROPS" >"$STDOUT_LOG" 2>&1 </dev/null 9>&- &
  pid=$!
  printf '%s\n' "$pid" >"$PID_FILE"

  local deadline=$((SECONDS + START_TIMEOUT))
  while :; do
    if ! pid_alive "$pid"; then
      wait "$pid" 2>/dev/null || true
      rm -f "$PID_FILE"
      print_tail
      die "the broker exited during startup (pid $pid)"
    fi
    if grep -qF "$READY_LINE" "$SERVER_LOG" 2>/dev/null && port_open "$KAFKA_PORT"; then
      break
    fi
    if ((SECONDS >= deadline)); then
      print_tail
      log "not ready after $START_TIMEOUT s, stopping it"
      stop_pid "$pid" pid_alive
      wait "$pid" 2>/dev/null || true
      rm -f "$PID_FILE"
      die "the broker did not become ready within $START_TIMEOUT s"
    fi
    sleep 0.5
  done
  log "ready in $((SECONDS - t0)) s"
  if [[ "$SECURE" == 1 && -z "${KAFKA__SHARED_DIR:-}" ]]; then
    acl_apply "$TOPIC_PREFIX"
  fi
  report_running "pid $pid"
}

# ------------------------------------------------------------------------------------------------- stop

# stop_pid PID [CHECK]: SIGTERM, then SIGKILL after STOP_TIMEOUT s while CHECK PID (default is_our_broker)
# says it is still there.
stop_pid() {
  local pid="$1" check="${2:-is_our_broker}" deadline
  kill -TERM "$pid" 2>/dev/null || return 0
  deadline=$((SECONDS + STOP_TIMEOUT))
  while "$check" "$pid"; do
    if ((SECONDS >= deadline)); then
      log "still alive after $STOP_TIMEOUT s, sending SIGKILL to $pid"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 1
      break
    fi
    sleep 0.5
  done
  if "$check" "$pid"; then
    die "could not stop pid $pid"
  fi
}

cmd_stop() {
  take_lock
  local pid
  if ! pid="$(running_pid)"; then
    rm -f "$PID_FILE"
    log "not running"
    return 0
  fi
  log "stopping the broker (pid $pid)"
  local t0=$SECONDS
  stop_pid "$pid"
  rm -f "$PID_FILE"
  log "stopped in $((SECONDS - t0)) s"
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    if port_open "$KAFKA_PORT"; then
      report_running "pid $pid"
      return 0
    fi
    log "process $pid is alive but 127.0.0.1:$KAFKA_PORT does not accept connections (starting or stuck?)"
    return 3
  fi
  log "not running (data dir $DATA_DIR)"
  return 3
}

cmd_reset() {
  if [[ ! -e "$DATA_DIR" ]]; then
    log "nothing to delete at $DATA_DIR"
    return 0
  fi
  # Refuse to touch a directory this script did not create (e.g. a mistyped KAFKA_DATA_DIR).
  if [[ ! -e "$MARKER" ]] && [[ -n "$(find "$DATA_DIR" -mindepth 1 -maxdepth 1 ! -name .lock -print -quit)" ]]; then
    die "$DATA_DIR does not look like a kafka.sh data directory (no $(basename "$MARKER")); not deleting it"
  fi
  cmd_stop
  rm -rf -- "$DATA_DIR"
  log "deleted $DATA_DIR"
}

cmd_logs() {
  [[ -f "$SERVER_LOG" ]] || die "no log at $SERVER_LOG"
  tail -n "${1:-100}" "$SERVER_LOG"
}

# ---------------------------------------------------------------------------------------------- cluster

node_port() { printf '%s\n' "$((KAFKA_PORT + ($1 - 1) * PORT_STEP))"; }
node_controller_port() { printf '%s\n' "$((KAFKA_CONTROLLER_PORT + ($1 - 1) * PORT_STEP))"; }

cluster_bootstrap() {
  local i out=()
  for ((i = 1; i <= BROKERS; i++)); do out+=("127.0.0.1:$(node_port "$i")"); done
  (IFS=, && printf '%s\n' "${out[*]}")
}

cluster_voters() {
  local i out=()
  for ((i = 1; i <= BROKERS; i++)); do out+=("$i@127.0.0.1:$(node_controller_port "$i")"); done
  (IFS=, && printf '%s\n' "${out[*]}")
}

# The nodes a cluster command acts on: --node I, or all.
cluster_nodes() {
  if [[ -n "$NODE" ]]; then printf '%s\n' "$NODE"; else seq 1 "$BROKERS"; fi
}

# run_node I ARGS...: this script for node I of the cluster (its own data dir, ports, id; the cluster's quorum,
# replication factor and shared directory).
run_node() {
  local i="$1" port ctl voters
  shift
  port="$(node_port "$i")"
  ctl="$(node_controller_port "$i")"
  voters="$(cluster_voters)"
  KAFKA_DATA_DIR="$DATA_DIR/node-$i" KAFKA_PORT="$port" KAFKA_CONTROLLER_PORT="$ctl" KAFKA_BROKERS=1 \
    KAFKA__NODE_ID="$i" KAFKA__VOTERS="$voters" KAFKA__SHARED_DIR="$DATA_DIR" \
    KAFKA__REPLICATION="$((BROKERS < 3 ? BROKERS : 3))" KAFKA_SECURE="$SECURE" bash "$SCRIPT_PATH" "$@"
}

# cluster_each CMD: run_node I CMD for every node concurrently, output in <data dir>/node-I.CMD.out; fails
# (after printing the failed nodes' output) when any node failed.
cluster_each() {
  local cmd="$1" i pids=() nodes failed=0
  mapfile -t nodes < <(cluster_nodes)
  for i in "${nodes[@]}"; do
    run_node "$i" "$cmd" >"$DATA_DIR/node-$i.$cmd.out" 2>&1 9>&- &
    pids+=($!)
  done
  for ((i = 0; i < ${#nodes[@]}; i++)); do
    if ! wait "${pids[$i]}"; then
      log "node ${nodes[$i]}: $cmd failed:"
      sed 's/^/  /' "$DATA_DIR/node-${nodes[$i]}.$cmd.out" >&2
      failed=1
    fi
  done
  return "$failed"
}

cluster_start() {
  take_lock
  [[ "$SECURE" == 0 || "$SECURE" == 1 ]] || die "KAFKA_SECURE must be 0 or 1, got '$SECURE'"
  [[ -z "$KAFKA_CLEAR_PORT" ]] || die "KAFKA_CLEAR_PORT is for a single broker, not --brokers $BROKERS"
  check_mode
  if [[ -s "$DATA_DIR/brokers" && "$(<"$DATA_DIR/brokers")" != "$BROKERS" ]]; then
    die "$DATA_DIR holds a cluster of $(<"$DATA_DIR/brokers") nodes, not $BROKERS; \`kafka.sh reset\` it or use another KAFKA_DATA_DIR"
  fi
  ((PORT_STEP >= 1)) || die "KAFKA_PORT_STEP must be at least 1"
  local ports=() i
  for ((i = 1; i <= BROKERS; i++)); do ports+=("$(node_port "$i")" "$(node_controller_port "$i")"); done
  [[ "$(printf '%s\n' "${ports[@]}" | sort -u | wc -l)" == "${#ports[@]}" ]] \
    || die "the nodes' ports collide (${ports[*]}): set KAFKA_PORT_STEP or KAFKA_CONTROLLER_PORT"
  need java "running the broker (Java 17+)"
  cmd_fetch
  mkdir -p "$DATA_DIR"
  touch "$MARKER"
  printf '%s\n' "$BROKERS" >"$DATA_DIR/brokers"
  if [[ "$SECURE" == 1 ]]; then
    make_credentials
    make_tls
  fi
  [[ -s "$CLUSTER_ID_FILE" ]] || new_cluster_id >"$CLUSTER_ID_FILE"
  local t0=$SECONDS
  log "starting node(s) $(cluster_nodes | tr '\n' ' ')of a $BROKERS-node cluster on $BOOTSTRAP"
  # N JVMs start at once and none is ready before a quorum is: more time than one broker gets by default
  [[ -n "${KAFKA_START_TIMEOUT:-}" ]] || export KAFKA_START_TIMEOUT=240
  cluster_each start || die "the cluster did not start (nodes that did are still running: \`kafka.sh stop\`)"
  if [[ "$SECURE" == 1 ]]; then echo secure >"$MODE_FILE"; else echo plain >"$MODE_FILE"; fi
  log "cluster ready in $((SECONDS - t0)) s"
  if [[ "$SECURE" == 1 ]]; then
    acl_apply "$TOPIC_PREFIX"
  fi
  report_running "cluster of $BROKERS"
}

cluster_stop() {
  take_lock
  cluster_each stop || die "a node did not stop"
  log "stopped node(s) $(cluster_nodes | tr '\n' ' ')"
}

cluster_status() {
  local i up=0 total=0
  for i in $(cluster_nodes); do
    total=$((total + 1))
    if run_node "$i" status >/dev/null 2>&1; then
      up=$((up + 1))
      log "node $i: running on 127.0.0.1:$(node_port "$i") (pid $(<"$DATA_DIR/node-$i/kafka.pid"))"
    else
      log "node $i: not running"
    fi
  done
  ((up == total)) || return 3
  report_running "cluster of $BROKERS"
}

cluster_reset() {
  if [[ ! -e "$DATA_DIR" ]]; then
    log "nothing to delete at $DATA_DIR"
    return 0
  fi
  [[ -e "$MARKER" ]] || die "$DATA_DIR does not look like a kafka.sh data directory (no $(basename "$MARKER")); not deleting it"
  NODE="" cluster_stop
  rm -rf -- "$DATA_DIR"
  log "deleted $DATA_DIR"
}

cluster_logs() {
  local i
  for i in $(cluster_nodes); do
    printf '==== node %s ====\n' "$i"
    run_node "$i" logs "$@" || true
  done
}

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
}

main() {
  local cmd="${1:-}" a
  shift || true
  local rest=()
  while (($#)); do
    case "$1" in
      --secure) SECURE=1 ;;
      --brokers) BROKERS="${2:-}"; shift ;;
      --brokers=*) BROKERS="${1#*=}" ;;
      --node) NODE="${2:-}"; shift ;;
      --node=*) NODE="${1#*=}" ;;
      *) rest+=("$1") ;;
    esac
    shift
  done
  if [[ -z "$BROKERS" ]]; then
    if [[ -s "$DATA_DIR/brokers" ]]; then BROKERS="$(<"$DATA_DIR/brokers")"; else BROKERS=1; fi
  fi
  check_int "--brokers (KAFKA_BROKERS)" "$BROKERS"
  ((BROKERS >= 1)) || die "--brokers must be at least 1"
  if ((BROKERS > 1)); then
    BOOTSTRAP="$(cluster_bootstrap)"
    if [[ -n "$NODE" ]]; then
      check_int --node "$NODE"
      ((NODE >= 1 && NODE <= BROKERS)) || die "--node must be 1..$BROKERS, got $NODE"
    fi
  elif [[ -n "$NODE" && "$NODE" != 1 ]]; then
    die "--node $NODE: $DATA_DIR is a single broker"
  fi
  case "$cmd" in
    start | restart | stop | status) ;;
    *) [[ -z "$NODE" ]] || die "--node is for start, stop, status and restart" ;;
  esac
  case "$cmd" in
    start | restart) ((${#rest[@]} == 0)) || die "unknown option for $cmd: ${rest[0]}" ;;
    fetch | acl | logs) ;;
    *) ((${#rest[@]} == 0)) || die "unknown argument for $cmd: ${rest[0]}" ;;
  esac
  if ((BROKERS > 1)); then
    case "$cmd" in
      fetch) cmd_fetch ${rest[@]+"${rest[@]}"} ;;
      start) cluster_start ;;
      restart) cluster_stop && cluster_start ;;
      stop) cluster_stop ;;
      status) cluster_status ;;
      reset) cluster_reset ;;
      logs) cluster_logs ${rest[@]+"${rest[@]}"} ;;
      acl)
        cluster_status >/dev/null 2>&1 || die "the cluster in $DATA_DIR is not running"
        acl_apply "${rest[0]-$TOPIC_PREFIX}"
        ;;
      -h | --help | help) usage ;;
      *)
        usage
        exit 2
        ;;
    esac
    return
  fi
  case "$cmd" in
    fetch) cmd_fetch ${rest[@]+"${rest[@]}"} ;;
    start | restart)
      if [[ "$cmd" == restart ]]; then cmd_stop; fi
      cmd_start
      ;;
    stop) cmd_stop ;;
    acl) cmd_acl ${rest[@]+"${rest[@]}"} ;;
    status) cmd_status ;;
    reset) cmd_reset ;;
    logs) cmd_logs ${rest[@]+"${rest[@]}"} ;;
    -h | --help | help) usage ;;
    *)
      usage
      exit 2
      ;;
  esac
}

main "$@"
