#!/usr/bin/env bash
# Make the real local services available (idempotent) and print the URLs to export.
#
#   PostgreSQL  127.0.0.1:5432, role and database `dovecote`
#   Redis       127.0.0.1:6379 (Celery broker: db 0, tests: db 15)
#   Artemis     Apache Artemis (the version in deploy/artemis/VERSION) from Maven Central, installed
#               under $DOVECOTE_ARTEMIS_ROOT (default /var/lib/dovecote-artemis) and run as the
#               `artemis` system user with deploy/artemis/broker.xml: STOMP on 127.0.0.1:61613
#               (61623 if something else holds 61613), user and password `dovecote`.
#
# Writes var/services.env (KEY=VALUE lines) and prints the same as `export KEY=VALUE` lines on
# stdout, so `eval "$(scripts/services.sh)"` works. Progress and one timing line per step go to
# stderr. Needs root (apt-get, a system user, starting daemons), as on the CI machines.
#
# Artemis log: $DOVECOTE_ARTEMIS_ROOT/instance/log/console.log (start-up errors land here too).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VAR=$ROOT/var
ENV_FILE=$VAR/services.env

PG_HOST=127.0.0.1
PG_PORT=5432
DB_NAME=dovecote
DB_USER=dovecote
DB_PASSWORD=dovecote # trust auth here; the password makes the URL work under md5/scram too

REDIS_HOST=127.0.0.1
REDIS_PORT=6379

ARTEMIS_VERSION=$(tr -d '[:space:]' <"$ROOT/deploy/artemis/VERSION")
ARTEMIS_ROOT=${DOVECOTE_ARTEMIS_ROOT:-/var/lib/dovecote-artemis}
ARTEMIS_HOME=$ARTEMIS_ROOT/apache-artemis-$ARTEMIS_VERSION
ARTEMIS_INSTANCE=$ARTEMIS_ROOT/instance
ARTEMIS_CONSOLE=$ARTEMIS_INSTANCE/log/console.log
ARTEMIS_PORT_FILE=$ARTEMIS_INSTANCE/etc/dovecote-stomp-port
ARTEMIS_OS_USER=artemis
ARTEMIS_LOGIN=dovecote
ARTEMIS_PASSCODE=dovecote # loopback only; docker-compose takes ARTEMIS_PASSWORD
ARTEMIS_HEAP=2G           # -Xmx; broker.xml pages queues to disk past 512 MB of messages
ARTEMIS_START_TIMEOUT=${ARTEMIS_START_TIMEOUT:-90}
ARTEMIS_STOP_TIMEOUT=60
# STOMP port: the first of these that is free or already ours (DOVECOTE_STOMP_PORTS overrides).
read -r -a ARTEMIS_PORTS <<<"${DOVECOTE_STOMP_PORTS:-61613 61623}"

# ---------------------------------------------------------------------------------------------
# helpers

say() { printf 'services: %s\n' "$*" >&2; }

die() {
    printf '\nservices: FAILED: %s\n' "$1" >&2
    shift
    local line
    for line in "$@"; do printf '  %s\n' "$line" >&2; done
    exit 1
}

# Last lines of a log file, indented, for failure messages.
tail_of() {
    local file=$1 lines=${2:-30}
    if [[ -s $file ]]; then
        printf '  --- last %s lines of %s ---\n' "$lines" "$file" >&2
        tail -n "$lines" "$file" | sed 's/^/  | /' >&2
    else
        printf '  (%s is empty or missing)\n' "$file" >&2
    fi
}

need_root() {
    [[ $EUID -eq 0 ]] || die "need root $1" "run: sudo $0"
}

now_us() { local t=${EPOCHREALTIME//[.,]/}; printf '%s' "$((10#$t))"; }
T_ALL=$(now_us)
T_STEP=$T_ALL
step_begin() { T_STEP=$(now_us); }
# step_end NAME DETAIL: one line with the time the step took.
step_end() {
    local ms=$((($(now_us) - T_STEP) / 1000))
    printf 'services: %-9s %3d.%02ds  %s\n' "$1" $((ms / 1000)) $((ms % 1000 / 10)) "$2" >&2
}

APT_UPDATED=
APT_LOG=$VAR/log/apt.log
apt_install() {
    need_root "to apt-get install $*"
    mkdir -p "$(dirname "$APT_LOG")"
    local apt=(apt-get -o DPkg::Lock::Timeout=300 -q)
    if [[ -z $APT_UPDATED ]]; then
        "${apt[@]}" update >>"$APT_LOG" 2>&1 || { tail_of "$APT_LOG"; die "apt-get update failed" "log: $APT_LOG"; }
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y "$@" >>"$APT_LOG" 2>&1 ||
        { tail_of "$APT_LOG"; die "apt-get install $* failed" "log: $APT_LOG"; }
}

pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# tcp_open PORT: something accepts connections on 127.0.0.1:PORT.
tcp_open() { timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null; }

# stomp_connect PORT: send a real STOMP CONNECT; on CONNECTED print the `server` header and
# succeed, otherwise print what came back (e.g. an ERROR frame's message) and fail.
stomp_connect() {
    timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || { echo "connection refused"; exit 1; }
        printf "CONNECT\naccept-version:1.2\nhost:localhost\nlogin:%s\npasscode:%s\nheart-beat:0,0\n\n\0" \
            "$2" "$3" >&3
        IFS= read -r -t 4 command <&3 || { echo "no reply to CONNECT"; exit 1; }
        command=${command%$'\''\r'\''}
        server="" message=""
        while IFS= read -r -t 4 header <&3; do
            header=${header%$'\''\r'\''}
            [[ -z $header ]] && break
            case $header in server:*) server=${header#server:} ;; message:*) message=${header#message:} ;; esac
        done
        if [[ $command != CONNECTED ]]; then echo "${command:-nothing} ${message}"; exit 1; fi
        printf "DISCONNECT\n\n\0" >&3
        echo "${server:-unknown server}"
    ' _ "$1" "$ARTEMIS_LOGIN" "$ARTEMIS_PASSCODE" 2>/dev/null || return 1
}

# ---------------------------------------------------------------------------------------------
# PostgreSQL

pg_up() { pg_isready -h "$PG_HOST" -p "$PG_PORT" -q -t 2; }

# psql as the superuser: over TCP as `postgres` (trust auth), else over the socket as the
# `postgres` OS user (peer auth). pick_psql_admin finds which, once, in the main shell.
PSQL_ADMIN=()
pick_psql_admin() {
    if psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -XqAt -c 'select 1' >/dev/null 2>&1; then
        PSQL_ADMIN=(psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres)
    elif [[ $EUID -eq 0 ]] && runuser -u postgres -- psql -p "$PG_PORT" -d postgres -XqAt -c 'select 1' >/dev/null 2>&1; then
        PSQL_ADMIN=(runuser -u postgres -- psql -p "$PG_PORT" -d postgres)
    else
        die "cannot log in to PostgreSQL as the superuser postgres" \
            "tried: psql -h $PG_HOST -p $PG_PORT -U postgres, and runuser -u postgres -- psql"
    fi
}
psql_admin() { "${PSQL_ADMIN[@]}" -XqAt -v ON_ERROR_STOP=1 "$@"; }

ensure_postgres() {
    step_begin
    local detail="up on $PG_HOST:$PG_PORT"
    if ! pg_up; then
        command -v pg_ctlcluster >/dev/null || apt_install postgresql
        need_root "to start PostgreSQL"
        local version rc=0
        version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
        [[ -n $version ]] || die "no PostgreSQL cluster under /etc/postgresql"
        pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 9>&- || rc=$?
        # Exit code 2: already running (perhaps still starting up).
        [[ $rc -eq 0 || $rc -eq 2 ]] ||
            die "pg_ctlcluster $version main start exited $rc" "log: /var/log/postgresql/postgresql-$version-main.log"
        local i
        for ((i = 0; i < 30; i++)); do pg_up && break; sleep 1; done
        pg_up || { tail_of "/var/log/postgresql/postgresql-$version-main.log"; die "PostgreSQL $version did not answer on $PG_HOST:$PG_PORT within 30 s"; }
        detail="started cluster $version/main on $PG_HOST:$PG_PORT"
    fi

    pick_psql_admin
    # role: -1 missing, 0 without CREATEDB (pytest-django creates test_dovecote), 1 fine.
    local state role db
    state=$(psql_admin -F ' ' -c "select coalesce((select rolcreatedb::int from pg_roles where rolname = '$DB_USER'), -1),
                                         (select count(*) from pg_database where datname = '$DB_NAME')")
    read -r role db <<<"$state"
    if [[ $role == -1 ]]; then
        # Guarded again in SQL, in case another run created it meanwhile.
        psql_admin -c "do \$\$ begin
                           if not exists (select from pg_roles where rolname = '$DB_USER') then
                               create role $DB_USER login createdb password '$DB_PASSWORD';
                           end if;
                       end \$\$;"
        detail+=", created role $DB_USER"
    elif [[ $role == 0 ]]; then
        psql_admin -c "alter role $DB_USER createdb"
        detail+=", granted CREATEDB to $DB_USER"
    fi
    if [[ $db == 0 ]]; then
        psql_admin -c "create database $DB_NAME owner $DB_USER"
        detail+=", created database $DB_NAME"
    fi
    DATABASE_URL="postgres://$DB_USER:$DB_PASSWORD@$PG_HOST:$PG_PORT/$DB_NAME"
    psql "$DATABASE_URL" -XqAt -c 'select 1' >/dev/null 2>&1 ||
        die "cannot connect with DATABASE_URL=$DATABASE_URL" "$(psql "$DATABASE_URL" -XqAt -c 'select 1' 2>&1 | head -n 3)"
    step_end postgres "$detail"
}

# ---------------------------------------------------------------------------------------------
# Redis

redis_ping() {
    timeout 3 bash -c '
        exec 3<>"/dev/tcp/$1/$2" || exit 1
        printf "PING\r\n" >&3
        IFS= read -r -t 2 reply <&3 && [[ ${reply%$'\''\r'\''} == +PONG ]]
    ' _ "$REDIS_HOST" "$REDIS_PORT" 2>/dev/null
}

ensure_redis() {
    step_begin
    local detail="up on $REDIS_HOST:$REDIS_PORT"
    if ! redis_ping; then
        command -v redis-server >/dev/null || apt_install redis-server
        redis-server --daemonize yes --bind "$REDIS_HOST" --port "$REDIS_PORT" --save "" --appendonly no >&2 9>&- ||
            die "redis-server would not start"
        local i
        for ((i = 0; i < 50; i++)); do redis_ping && break; sleep 0.2; done
        redis_ping || die "Redis did not answer PING on $REDIS_HOST:$REDIS_PORT within 10 s"
        detail="started on $REDIS_HOST:$REDIS_PORT"
    fi
    CELERY_BROKER_URL="redis://$REDIS_HOST:$REDIS_PORT/0"
    TEST_REDIS_URL="redis://$REDIS_HOST:$REDIS_PORT/15"
    step_end redis "$detail"
}

# ---------------------------------------------------------------------------------------------
# Apache Artemis


# The pid of our broker's JVM: a `java` process with -Dartemis.instance=$ARTEMIS_INSTANCE.
artemis_pid() {
    local file pid
    while IFS= read -r file; do
        pid=${file#/proc/}
        pid=${pid%/cmdline}
        if [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == java ]]; then
            echo "$pid"
            return 0
        fi
    done < <(grep -lzxF -- "-Dartemis.instance=$ARTEMIS_INSTANCE" /proc/[0-9]*/cmdline 2>/dev/null)
    return 1
}

# port_is_ours PORT PID: the listener on 127.0.0.1:PORT is our broker (pid PID).
port_is_ours() {
    local port=$1 ours=$2 pid
    [[ -n $ours ]] || return 1
    if command -v ss >/dev/null; then
        for pid in $(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2); do
            [[ $pid == "$ours" ]] && return 0
        done
        return 1
    fi
    # Without ss: our broker is running and this is the port it was started with.
    [[ "$(cat "$ARTEMIS_PORT_FILE" 2>/dev/null)" == "$port" ]]
}

# choose_port: 61613 unless something that is not our broker holds it, then the next candidate.
choose_port() {
    local port ours holder
    ours=$(artemis_pid || true)
    for port in "${ARTEMIS_PORTS[@]}"; do
        tcp_open "$port" || { echo "$port"; return 0; }
        port_is_ours "$port" "$ours" && { echo "$port"; return 0; }
        holder=$(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'users:.*' | head -n 1 || true)
        say "127.0.0.1:$port is taken by something else ${holder:+($holder)}"
    done
    die "no free port for Artemis's STOMP acceptor among ${ARTEMIS_PORTS[*]}" \
        "free one, or list others to try: DOVECOTE_STOMP_PORTS=\"61613 61643\" $0"
}

java_home() {
    local dir
    for dir in /usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/default-java /usr/lib/jvm/java-21-openjdk-*; do
        [[ -x $dir/bin/java ]] && { echo "${dir%/}"; return 0; }
    done
    dir=$(readlink -f "$(command -v java)" 2>/dev/null) || die "no Java found for Artemis (it needs Java 17+)"
    dirname "$(dirname "$dir")"
}

# The distribution, from Maven Central through Maven (its local repository caches the download).
ensure_artemis_distribution() {
    step_begin
    if [[ -x $ARTEMIS_HOME/bin/artemis ]]; then
        step_end artemis "distribution $ARTEMIS_VERSION in $ARTEMIS_HOME"
        return 0
    fi
    command -v mvn >/dev/null || apt_install maven
    local staging log=$VAR/log/artemis-download.log
    mkdir -p "$ARTEMIS_ROOT" "$(dirname "$log")"
    staging=$(mktemp -d "$ARTEMIS_ROOT/.download.XXXXXX")
    mvn -B -q dependency:copy -Dartifact="org.apache.activemq:apache-artemis:$ARTEMIS_VERSION:tar.gz:bin" \
        -DoutputDirectory="$staging" >"$log" 2>&1 ||
        { tail_of "$log"; rm -rf "$staging"; die "Maven could not fetch apache-artemis $ARTEMIS_VERSION (bin tar.gz)" "log: $log"; }
    tar -xzf "$staging/apache-artemis-$ARTEMIS_VERSION-bin.tar.gz" -C "$staging" ||
        { rm -rf "$staging"; die "could not unpack apache-artemis-$ARTEMIS_VERSION-bin.tar.gz"; }
    rm -rf "$ARTEMIS_HOME"
    mv "$staging/apache-artemis-$ARTEMIS_VERSION" "$ARTEMIS_HOME"
    rm -rf "$staging"
    step_end artemis "installed $ARTEMIS_VERSION from Maven Central into $ARTEMIS_HOME"
}

# The broker instance, made by deploy/artemis/create-instance.sh (which docker-compose's image
# runs too). ARTEMIS_CONFIG_CHANGED=1 when a running broker must restart.
ensure_artemis_instance() {
    id -u "$ARTEMIS_OS_USER" >/dev/null 2>&1 ||
        useradd --system --home-dir "$ARTEMIS_ROOT" --no-create-home --shell /usr/sbin/nologin "$ARTEMIS_OS_USER"
    local log=$VAR/log/artemis-create.log changed
    mkdir -p "$(dirname "$log")"
    changed=$(ARTEMIS_USER=$ARTEMIS_LOGIN ARTEMIS_PASSWORD=$ARTEMIS_PASSCODE ARTEMIS_HEAP=$ARTEMIS_HEAP \
        bash "$ROOT/deploy/artemis/create-instance.sh" "$ARTEMIS_HOME" "$ARTEMIS_INSTANCE" 2>"$log") ||
        { tail_of "$log"; die "could not create the Artemis instance $ARTEMIS_INSTANCE" "log: $log"; }
    ARTEMIS_CONFIG_CHANGED=0
    [[ $changed == changed ]] && ARTEMIS_CONFIG_CHANGED=1
    chown -R "$ARTEMIS_OS_USER:" "$ARTEMIS_INSTANCE"
}

stop_artemis() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < ARTEMIS_STOP_TIMEOUT * 5; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    say "Artemis (pid $pid) still running ${ARTEMIS_STOP_TIMEOUT}s after SIGTERM: sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

start_artemis() {
    local port=$1
    mkdir -p "$ARTEMIS_INSTANCE/log"
    printf '\n=== %s: starting on 127.0.0.1:%s (scripts/services.sh)\n' "$(date -Is)" "$port" >>"$ARTEMIS_CONSOLE"
    chown "$ARTEMIS_OS_USER:" "$ARTEMIS_INSTANCE/log" "$ARTEMIS_CONSOLE"
    echo "$port" >"$ARTEMIS_PORT_FILE"
    # `artemis run` in the background as the broker's user; setsid detaches it from this terminal
    # so Ctrl-C here does not stop it. It must not inherit the lock (fd 9) or our output pipes.
    setsid setpriv --reuid="$ARTEMIS_OS_USER" --regid="$(id -g "$ARTEMIS_OS_USER")" --init-groups \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$ARTEMIS_INSTANCE" LANG=C.UTF-8 JAVA_HOME="$(java_home)" \
        JAVA_ARGS_APPEND="-Ddovecote.stomp.host=127.0.0.1 -Ddovecote.stomp.port=$port -XX:+ExitOnOutOfMemoryError" \
        "$ARTEMIS_INSTANCE/bin/artemis" run </dev/null >>"$ARTEMIS_CONSOLE" 2>&1 9>&- &
}

# The broker's last error, for the one-line failure message (its stack trace is in the tail).
artemis_cause() {
    grep -hE 'ERROR|FATAL|Exception|Error:' "$ARTEMIS_CONSOLE" 2>/dev/null | tail -n 1 | cut -c1-400
}

# wait_for_stomp PORT: until a STOMP CONNECT gets CONNECTED, the JVM dies, or the timeout.
wait_for_stomp() {
    local port=$1 started pid reply=""
    started=$(now_us)
    printf 'services: waiting for Artemis STOMP on 127.0.0.1:%s ' "$port" >&2
    sleep 0.5
    while true; do
        if reply=$(stomp_connect "$port"); then
            printf ' up\n' >&2
            STOMP_SERVER=$reply
            return 0
        fi
        pid=$(artemis_pid || true)
        if [[ -z $pid ]]; then
            printf '\n' >&2
            tail_of "$ARTEMIS_CONSOLE" 30
            die "Artemis exited while starting (last STOMP attempt: ${reply:-none})" \
                "cause: $(artemis_cause)" "log: $ARTEMIS_CONSOLE"
        fi
        if (($(now_us) - started > ARTEMIS_START_TIMEOUT * 1000000)); then
            printf '\n' >&2
            tail_of "$ARTEMIS_CONSOLE" 30
            die "Artemis (pid $pid) gave no STOMP CONNECTED on 127.0.0.1:$port within ${ARTEMIS_START_TIMEOUT}s (last reply: ${reply:-none})" \
                "last error in its log: $(artemis_cause)" "log: $ARTEMIS_CONSOLE"
        fi
        printf '.' >&2
        sleep 0.5
    done
}

ensure_artemis() {
    need_root "to install and start Apache Artemis"
    ensure_artemis_distribution
    step_begin
    local port pid detail
    port=$(choose_port)
    pid=$(artemis_pid || true)
    ensure_artemis_instance
    if [[ -n $pid ]] && { ((ARTEMIS_CONFIG_CHANGED)) || [[ "$(cat "$ARTEMIS_PORT_FILE" 2>/dev/null)" != "$port" ]]; }; then
        say "Artemis configuration changed: restarting the broker (pid $pid)"
        stop_artemis "$pid"
        pid=""
    fi
    STOMP_SERVER=""
    if [[ -z $pid ]]; then
        start_artemis "$port"
        detail="started"
    elif STOMP_SERVER=$(stomp_connect "$port"); then
        detail="running"
    fi
    [[ -n $STOMP_SERVER ]] || wait_for_stomp "$port"
    [[ $STOMP_SERVER == *Artemis* ]] ||
        die "the STOMP server on 127.0.0.1:$port is not Apache Artemis (CONNECTED from: $STOMP_SERVER)"
    pid=$(artemis_pid || true)
    [[ -n $pid ]] || die "Artemis answers on 127.0.0.1:$port but its JVM is not found" "log: $ARTEMIS_CONSOLE"
    STOMP_URL="stomp://$ARTEMIS_LOGIN:$ARTEMIS_PASSCODE@127.0.0.1:$port"
    step_end broker "$detail (pid $pid), STOMP CONNECTED on 127.0.0.1:$port from $STOMP_SERVER"
}

# ---------------------------------------------------------------------------------------------

mkdir -p "$VAR"
# One run at a time on this machine (the services are the machine's, whichever clone asks):
# two concurrent runs must not both start a broker. Daemons started below close fd 9.
LOCK=/run/lock/dovecote-services.lock
[[ -w ${LOCK%/*} ]] || LOCK=$VAR/.services.lock
exec 9>"$LOCK"
flock -w 600 9 || die "another scripts/services.sh has held $LOCK for 10 minutes"

ensure_postgres
ensure_redis
ensure_artemis

tmp_env=$(mktemp "$VAR/.services.env.XXXXXX")
cat >"$tmp_env" <<EOF
DATABASE_URL=$DATABASE_URL
STOMP_URL=$STOMP_URL
CELERY_BROKER_URL=$CELERY_BROKER_URL
TEST_REDIS_URL=$TEST_REDIS_URL
DOVECOTE_ARTEMIS_HOME=$ARTEMIS_HOME
EOF
chmod 0644 "$tmp_env"
mv -f "$tmp_env" "$ENV_FILE"

T_STEP=$T_ALL
step_end total "wrote ${ENV_FILE#"$ROOT"/}"
sed 's/^/export /' "$ENV_FILE"
