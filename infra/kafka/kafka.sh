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
#   stop      SIGTERM the broker from the pid file, SIGKILL after KAFKA_STOP_TIMEOUT seconds
#   restart   stop + start
#   status    exit 0 and print KAFKA_BOOTSTRAP_SERVERS=... if running, exit 3 if not
#   reset     stop and delete the data directory
#   logs      print the tail of the broker log
#
# Environment (all optional):
#   KAFKA_DATA_DIR          data, logs, pid file, rendered config   (default <repo>/var/kafka)
#   KAFKA_PORT              client (PLAINTEXT) listener on 127.0.0.1 (default 19092)
#   KAFKA_CONTROLLER_PORT   KRaft controller listener on 127.0.0.1  (default 19093)
#   KAFKA_START_TIMEOUT     seconds to wait for readiness            (default 90)
#   KAFKA_STOP_TIMEOUT      seconds between SIGTERM and SIGKILL      (default 30)
#   KAFKA_HEAP_OPTS         JVM heap flags                           (default "-Xms256m -Xmx1g")
#   KAFKA_JAVA_OPTS         extra JVM flags
#   KAFKA_MVN_ARGS          extra Maven arguments for `fetch` (e.g. -o, -s settings.xml)
#
# The broker is only ever stopped through the pid in its pid file, after checking that this pid is the
# java process started with this data directory's server.properties; never by process name.
set -euo pipefail

SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd -- "$SCRIPT_DIR/../.." && pwd -P)"

POM="$SCRIPT_DIR/pom.xml"
TEMPLATE="$SCRIPT_DIR/server.properties.template"
LOG4J_CONFIG="$SCRIPT_DIR/log4j2.properties"
LIBS="$SCRIPT_DIR/libs"
STAMP="$LIBS/.pom.sha256"
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

KAFKA_PORT="${KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g}"
EXTRA_JAVA_OPTS="${KAFKA_JAVA_OPTS:-}"
MVN_ARGS="${KAFKA_MVN_ARGS:-}"

DATA_DIR="${KAFKA_DATA_DIR:-$REPO_ROOT/var/kafka}"
case "$DATA_DIR" in
  /*) ;;
  *) DATA_DIR="$PWD/$DATA_DIR" ;;
esac
DATA_DIR="${DATA_DIR%/}"

PROPS="$DATA_DIR/server.properties"
PID_FILE="$DATA_DIR/kafka.pid"
CLUSTER_ID_FILE="$DATA_DIR/cluster.id"
LOG_DIR="$DATA_DIR/logs"
PARTITION_DIR="$DATA_DIR/data"
SERVER_LOG="$LOG_DIR/server.log"
STDOUT_LOG="$LOG_DIR/kafka.out"
MARKER="$DATA_DIR/.croupier-kafka"
LOCK_FILE="$DATA_DIR/.lock"
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
[[ "$KAFKA_PORT" != "$KAFKA_CONTROLLER_PORT" ]] || die "KAFKA_PORT and KAFKA_CONTROLLER_PORT must differ"

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
  ! [[ "$t" =~ @[A-Z_]+@ ]] || die "unrendered placeholder left in $TEMPLATE"
  printf '%s\n' "$t" >"$PROPS.tmp"
  mv "$PROPS.tmp" "$PROPS"
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
  local opts
  mapfile -t opts < <(java_base_opts)
  # Static controller.quorum.voters: no --standalone.
  if ! java -Xmx256m "${opts[@]}" -cp "$LIBS/*" kafka.tools.StorageTool format \
      -c "$PROPS" -t "$cid" --ignore-formatted >"$LOG_DIR/format.out" 2>&1; then
    cat "$LOG_DIR/format.out" >&2
    die "formatting the storage failed"
  fi
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
  log "running (pid $1), bootstrap servers $BOOTSTRAP, data in $DATA_DIR"
  printf 'KAFKA_BOOTSTRAP_SERVERS=%s\n' "$BOOTSTRAP"
}

cmd_start() {
  take_lock
  local pid
  if pid="$(running_pid)"; then
    log "already running"
    report_running "$pid"
    return 0
  fi
  rm -f "$PID_FILE"
  local port
  for port in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
    if port_open "$port"; then
      die "127.0.0.1:$port is already in use by another process (not this data dir's broker);" \
        "set KAFKA_PORT / KAFKA_CONTROLLER_PORT or stop it"
    fi
  done

  need java "running the broker (Java 17+)"
  cmd_fetch
  mkdir -p "$LOG_DIR" "$PARTITION_DIR"
  touch "$MARKER"
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
  report_running "$pid"
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
      report_running "$pid"
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

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
}

main() {
  local cmd="${1:-}"
  shift || true
  case "$cmd" in
    fetch) cmd_fetch "$@" ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    restart) cmd_stop && cmd_start ;;
    status) cmd_status ;;
    reset) cmd_reset ;;
    logs) cmd_logs "$@" ;;
    -h | --help | help) usage ;;
    *)
      usage
      exit 2
      ;;
  esac
}

main "$@"
