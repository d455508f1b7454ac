#!/usr/bin/env bash
# Make the real local services available (idempotent) and print the URLs to export.
#
#   PostgreSQL  127.0.0.1:5432, role and database `dovecote`
#   Redis       127.0.0.1:6379 (Celery broker: db 0, tests: db 15)
#   ActiveMQ    Classic from Debian's `activemq` package, standing in for Apache Artemis:
#               STOMP with scheduled delivery on 127.0.0.1:61613 (61623 if something else
#               holds 61613, e.g. RabbitMQ's STOMP plugin), instance `dovecote`.
#
# Writes var/services.env (KEY=VALUE lines) and prints the same as `export KEY=VALUE` lines on
# stdout, so `eval "$(scripts/services.sh)"` works. Progress and one timing line per step go to
# stderr. Needs root (apt-get, /etc/activemq, starting daemons), as on the CI machines.
#
# ActiveMQ logs: /var/lib/activemq/dovecote/data/activemq.log (the broker's log4j 1.2 log) and
# /var/lib/activemq/dovecote/data/console.log (JVM stdout/stderr: start-up errors land here).
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

AMQ_INSTANCE=dovecote
AMQ_USER=activemq
AMQ_LOGIN=admin
AMQ_PASSCODE=admin # must match scripts/activemq.xml
# STOMP port: the first of these that is free or already ours (DOVECOTE_STOMP_PORTS overrides).
read -r -a AMQ_PORTS <<<"${DOVECOTE_STOMP_PORTS:-61613 61623}"
AMQ_CONF_AVAILABLE=/etc/activemq/instances-available/$AMQ_INSTANCE
AMQ_CONF=/etc/activemq/instances-enabled/$AMQ_INSTANCE
AMQ_BASE=/var/lib/activemq/$AMQ_INSTANCE
AMQ_DATA=$AMQ_BASE/data
AMQ_TMP=$AMQ_BASE/tmp
AMQ_PIDFILE=/var/run/activemq/$AMQ_INSTANCE.pid # where /etc/init.d/activemq looks too
AMQ_LOG=$AMQ_DATA/activemq.log
AMQ_CONSOLE=$AMQ_DATA/console.log
AMQ_HEAP="-Xms64m -Xmx1g"
AMQ_START_TIMEOUT=${AMQ_START_TIMEOUT:-90}
AMQ_STOP_TIMEOUT=60

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
    ' _ "$1" "$AMQ_LOGIN" "$AMQ_PASSCODE" 2>/dev/null || return 1
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
        pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || rc=$?
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
        redis-server --daemonize yes --bind "$REDIS_HOST" --port "$REDIS_PORT" --save "" --appendonly no >&2 ||
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
# ActiveMQ Classic

ensure_activemq_package() {
    step_begin
    local detail
    if pkg_installed activemq && [[ -x /usr/bin/activemq ]]; then
        detail="installed"
    else
        apt_install activemq
        detail="installed with apt-get (log: $APT_LOG)"
    fi
    step_end activemq "$detail $(dpkg-query -W -f='${Version}' activemq)"
}

# The pid of our broker's JVM: a `java` process with our -Dactivemq.base among its arguments.
# (Reads /proc directly: no dependency on procps.)
amq_pid() {
    local file pid
    while IFS= read -r file; do
        pid=${file#/proc/}
        pid=${pid%/cmdline}
        if [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == java ]]; then
            echo "$pid"
            return 0
        fi
    done < <(grep -lzxF -- "-Dactivemq.base=$AMQ_BASE" /proc/[0-9]*/cmdline 2>/dev/null)
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
    # Without ss: our broker is running and this is the port it was configured with.
    grep -qF "stomp://127.0.0.1:$port?" "$AMQ_CONF_AVAILABLE/activemq.xml" 2>/dev/null
}

# choose_port: 61613 unless something that is not our broker holds it, then 61623.
choose_port() {
    local port ours holder
    ours=$(amq_pid || true)
    for port in "${AMQ_PORTS[@]}"; do
        tcp_open "$port" || { echo "$port"; return 0; }
        port_is_ours "$port" "$ours" && { echo "$port"; return 0; }
        holder=$(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'users:.*' | head -n 1 || true)
        say "127.0.0.1:$port is taken by something else ${holder:+($holder)}"
    done
    die "no free port for ActiveMQ's STOMP connector among ${AMQ_PORTS[*]}" \
        "free one, or list others to try: DOVECOTE_STOMP_PORTS=\"61613 61643\" $0"
}

java_home() {
    local dir
    for dir in /usr/lib/jvm/default-java /usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/java-21-openjdk-* \
        /usr/lib/jvm/java-11-openjdk-*; do
        [[ -x $dir/bin/java ]] && { echo "${dir%/}"; return 0; }
    done
    dir=$(readlink -f "$(command -v java)" 2>/dev/null) || die "no Java found for ActiveMQ"
    dirname "$(dirname "$dir")"
}

# Render the instance's files into $1.
render_activemq_config() {
    local out=$1 port=$2
    sed "s/@STOMP_PORT@/$port/g" "$ROOT/scripts/activemq.xml" >"$out/activemq.xml"
    cp "$ROOT/scripts/activemq-log4j.properties" "$out/log4j.properties"
    # Read by /usr/bin/activemq (and /etc/init.d/activemq) instead of /usr/share/activemq/activemq-options.
    cat >"$out/options" <<EOF
# Generated by Dovecote's scripts/services.sh: edits are overwritten.
INSTANCE="$AMQ_INSTANCE"
ACTIVEMQ_USER="$AMQ_USER"
ACTIVEMQ_BASE="$AMQ_BASE"
ACTIVEMQ_CONF="$AMQ_CONF"
ACTIVEMQ_DATA="$AMQ_DATA"
ACTIVEMQ_TMP="$AMQ_TMP"
ACTIVEMQ_PIDFILE="$AMQ_PIDFILE"
JAVA_HOME="$(java_home)"
ACTIVEMQ_OPTS="$AMQ_HEAP -XX:+ExitOnOutOfMemoryError -Dorg.apache.activemq.UseDedicatedTaskRunner=true"
ACTIVEMQ_ARGS="start xbean:activemq.xml"
ACTIVEMQ_OUT="$AMQ_CONSOLE"
STARTTIME=0
EOF
}

# Install the rendered files; AMQ_CONFIG_CHANGED=1 if anything changed. (Called as a plain
# command, not in an `if`, so that `set -e` still applies inside.)
install_activemq_config() {
    local port=$1 staging name
    AMQ_CONFIG_CHANGED=0
    staging=$(mktemp -d)
    render_activemq_config "$staging" "$port"
    mkdir -p "$AMQ_CONF_AVAILABLE"
    for name in activemq.xml log4j.properties options; do
        if ! cmp -s "$staging/$name" "$AMQ_CONF_AVAILABLE/$name"; then
            install -m 0644 -o root -g root "$staging/$name" "$AMQ_CONF_AVAILABLE/$name"
            AMQ_CONFIG_CHANGED=1
        fi
    done
    rm -rf "$staging"
    if [[ "$(readlink "$AMQ_CONF" 2>/dev/null)" != "../instances-available/$AMQ_INSTANCE" ]]; then
        ln -sfn "../instances-available/$AMQ_INSTANCE" "$AMQ_CONF"
        AMQ_CONFIG_CHANGED=1
    fi
    # Data and pid directories belong to the broker's user (it will not start otherwise).
    mkdir -p "$AMQ_DATA" "$AMQ_TMP" "$(dirname "$AMQ_PIDFILE")"
    find "$AMQ_BASE" "$(dirname "$AMQ_PIDFILE")" \! -user "$AMQ_USER" -exec chown "$AMQ_USER:$AMQ_USER" {} +
}

stop_activemq() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < AMQ_STOP_TIMEOUT * 5; i++)); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$AMQ_PIDFILE"; return 0; }
        sleep 0.2
    done
    say "ActiveMQ (pid $pid) still running ${AMQ_STOP_TIMEOUT}s after SIGTERM: sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$AMQ_PIDFILE"
}

start_activemq() {
    rm -f "$AMQ_PIDFILE"
    printf '\n=== %s: starting (scripts/services.sh)\n' "$(date -Is)" >>"$AMQ_CONSOLE"
    chown "$AMQ_USER:$AMQ_USER" "$AMQ_CONSOLE"
    # /usr/bin/activemq forks the JVM (as the activemq user: setpriv) into the background and
    # writes the pidfile; setsid detaches it from this terminal so Ctrl-C here does not stop it.
    # The JVM must not inherit the lock (fd 9) or any of our output pipes.
    setsid -w setpriv --reuid="$AMQ_USER" --regid="$AMQ_USER" --init-groups \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$AMQ_BASE" LANG=C.UTF-8 \
        INSTANCE="$AMQ_INSTANCE" ACTIVEMQ_USER="$AMQ_USER" ACTIVEMQ_BASE="$AMQ_BASE" \
        ACTIVEMQ_CONF="$AMQ_CONF" ACTIVEMQ_DATA="$AMQ_DATA" ACTIVEMQ_TMP="$AMQ_TMP" \
        ACTIVEMQ_PIDFILE="$AMQ_PIDFILE" \
        /usr/bin/activemq start xbean:activemq.xml </dev/null >>"$AMQ_CONSOLE" 2>&1 9>&- ||
        { tail_of "$AMQ_CONSOLE"; die "/usr/bin/activemq start failed" "logs: $AMQ_LOG, $AMQ_CONSOLE"; }
}

# The broker's last error, for the one-line failure message (its stack trace is in the tails).
amq_cause() {
    grep -hE '^Caused by:|\| (ERROR|FATAL) +\||^Error|Exception:' "$AMQ_LOG" "$AMQ_CONSOLE" 2>/dev/null |
        tail -n 1 | cut -c1-400
}

# wait_for_stomp PORT: until a STOMP CONNECT gets CONNECTED, the JVM dies, or the timeout.
wait_for_stomp() {
    local port=$1 started pid reply=""
    started=$(now_us)
    printf 'services: waiting for ActiveMQ STOMP on 127.0.0.1:%s ' "$port" >&2
    while true; do
        if reply=$(stomp_connect "$port"); then
            printf ' up\n' >&2
            STOMP_SERVER=$reply
            return 0
        fi
        pid=$(amq_pid || true)
        if [[ -z $pid ]]; then
            printf '\n' >&2
            tail_of "$AMQ_CONSOLE" 10
            tail_of "$AMQ_LOG" 25
            die "ActiveMQ exited while starting (last STOMP attempt: ${reply:-none})" \
                "cause: $(amq_cause)" "logs: $AMQ_LOG, $AMQ_CONSOLE"
        fi
        if (($(now_us) - started > AMQ_START_TIMEOUT * 1000000)); then
            printf '\n' >&2
            tail_of "$AMQ_LOG" 25
            die "ActiveMQ (pid $pid) gave no STOMP CONNECTED on 127.0.0.1:$port within ${AMQ_START_TIMEOUT}s (last reply: ${reply:-none})" \
                "last error in its log: $(amq_cause)" "logs: $AMQ_LOG, $AMQ_CONSOLE"
        fi
        printf '.' >&2
        sleep 1
    done
}

ensure_activemq() {
    ensure_activemq_package
    step_begin
    need_root "to configure and start ActiveMQ"
    local port pid detail
    port=$(choose_port)
    pid=$(amq_pid || true)
    install_activemq_config "$port"
    if ((AMQ_CONFIG_CHANGED)); then
        if [[ -n $pid ]]; then
            say "ActiveMQ configuration changed: restarting the broker (pid $pid)"
            stop_activemq "$pid"
            pid=""
        fi
        detail="configured"
    else
        detail="config unchanged"
    fi
    STOMP_SERVER=""
    if [[ -z $pid ]]; then
        start_activemq
        detail+=", started"
    elif STOMP_SERVER=$(stomp_connect "$port"); then
        detail+=", running"
    fi
    [[ -n $STOMP_SERVER ]] || wait_for_stomp "$port"
    pid=$(amq_pid || true)
    [[ -n $pid ]] || die "ActiveMQ answers on 127.0.0.1:$port but its JVM is not found" "logs: $AMQ_LOG, $AMQ_CONSOLE"
    STOMP_URL="stomp://$AMQ_LOGIN:$AMQ_PASSCODE@127.0.0.1:$port"
    step_end broker "$detail (pid $pid), STOMP CONNECTED on 127.0.0.1:$port from $STOMP_SERVER"
}

# ---------------------------------------------------------------------------------------------

mkdir -p "$VAR"
# One run at a time: two concurrent runs must not both start a broker.
exec 9>"$VAR/.services.lock"
flock -w 600 9 || die "another scripts/services.sh has held $VAR/.services.lock for 10 minutes"

ensure_postgres
ensure_redis
ensure_activemq

tmp_env=$(mktemp "$VAR/.services.env.XXXXXX")
cat >"$tmp_env" <<EOF
DATABASE_URL=$DATABASE_URL
STOMP_URL=$STOMP_URL
CELERY_BROKER_URL=$CELERY_BROKER_URL
TEST_REDIS_URL=$TEST_REDIS_URL
EOF
chmod 0644 "$tmp_env"
mv -f "$tmp_env" "$ENV_FILE"

T_STEP=$T_ALL
step_end total "wrote ${ENV_FILE#"$ROOT"/}"
sed 's/^/export /' "$ENV_FILE"
