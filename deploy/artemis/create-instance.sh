#!/usr/bin/env bash
# Make an Apache Artemis broker instance run Dovecote's broker configuration (idempotent).
#
#   deploy/artemis/create-instance.sh ARTEMIS_HOME INSTANCE_DIR
#
# Environment: ARTEMIS_USER and ARTEMIS_PASSWORD (the one broker user, role `amq`), ARTEMIS_HEAP
# (the JVM's -Xmx, default 2G), ARTEMIS_HA (unset: a lone broker; `primary` or `backup`: one of a
# shared-store pair, its ha-policy from ha-primary.xml or ha-backup.xml). Runs `artemis create` when
# the instance is missing or was made by another Artemis version (keeping data/, the journal), sets
# the JVM's collector (COLLECTOR below) in its artemis.profile, then installs broker.xml from this
# folder. Prints "changed" when the running broker must restart to see the result.
#
# Used by scripts/services.sh (`make services`) and by this folder's Dockerfile (docker-compose),
# so both run the same version (VERSION) with the same settings (broker.xml).
set -euo pipefail

home=${1:?usage: create-instance.sh ARTEMIS_HOME INSTANCE_DIR}
instance=${2:?usage: create-instance.sh ARTEMIS_HOME INSTANCE_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${ARTEMIS_USER:?set ARTEMIS_USER}" "${ARTEMIS_PASSWORD:?set ARTEMIS_PASSWORD}"
changed=0

profile=$instance/etc/artemis.profile
if ! grep -qxF "ARTEMIS_HOME='$home'" "$profile" 2>/dev/null; then
    # STOMP is the only acceptor broker.xml defines; the flags below keep `create` from adding others.
    "$home/bin/artemis" create --silent --force --user "$ARTEMIS_USER" --password "$ARTEMIS_PASSWORD" \
        --require-login --no-web --no-autotune --nio --java-memory "${ARTEMIS_HEAP:-2G}" \
        --no-amqp-acceptor --no-mqtt-acceptor --no-hornetq-acceptor "$instance" >&2
    changed=1
fi
# ZGC, not the G1 that `artemis create` writes: G1 stopped the broker 3-6 times in 3 minutes of the
# bench's traffic, for 15-63 ms each (every delivery in flight waits that long); ZGC's pauses stay under
# 0.1 ms for the same broker CPU (docs/benchmarks.md, 2026-12-05 23:17 UTC). G1's string deduplication
# goes with it.
COLLECTOR="-XX:+UseZGC"
if grep -qF -- "-XX:+UseG1GC -XX:+UseStringDeduplication " "$profile"; then
    sed -i "s/-XX:+UseG1GC -XX:+UseStringDeduplication /$COLLECTOR /" "$profile"
    changed=1
fi
grep -qF -- "$COLLECTOR " "$profile" || {
    echo "$profile: no JAVA_ARGS with $COLLECTOR (did \`artemis create\` change its collector flags?)" >&2; exit 1; }

wanted=$(mktemp)
trap 'rm -f "$wanted"' EXIT
case ${ARTEMIS_HA:-} in
    "") cp "$here/broker.xml" "$wanted" ;;
    primary | backup) sed -e "/<!-- HA-POLICY -->/{r $here/ha-$ARTEMIS_HA.xml" -e 'd}' "$here/broker.xml" >"$wanted" ;;
    *) echo "ARTEMIS_HA must be primary, backup or unset, not '$ARTEMIS_HA'" >&2; exit 2 ;;
esac
if ! cmp -s "$wanted" "$instance/etc/broker.xml"; then
    cp "$wanted" "$instance/etc/broker.xml"
    changed=1
fi
((changed)) && echo changed
exit 0
