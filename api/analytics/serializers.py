from __future__ import annotations

from rest_framework import serializers

from analytics.models import ErrorReport, HourlyReport, LatencyReport, ReportRun
from dovecote.inputs import IdField


class ReportFilters(serializers.Serializer):
    room = IdField(required=False)
    subscription = IdField(required=False)
    since = serializers.DateTimeField(required=False, help_text="hours from this one")
    until = serializers.DateTimeField(required=False, help_text="hours before this one")


class HourlyFilters(ReportFilters):
    event_type = serializers.CharField(required=False)


class LatencyFilters(HourlyFilters):
    level = serializers.ChoiceField(choices=LatencyReport.Level.values, default=LatencyReport.Level.SUBSCRIPTION,
                                    help_text="room, subscription (the default) or event_type")


class ErrorFilters(ReportFilters):
    outcome = serializers.CharField(required=False)
    status_code = serializers.IntegerField(required=False, min_value=100, max_value=599)


class RetryCostFilters(ReportFilters):
    by = serializers.ChoiceField(choices=["room", "subscription"], default="room",
                                 help_text="room (summed over its subscriptions, the default) or subscription")


class ReportRowSerializer(serializers.ModelSerializer):
    room = serializers.IntegerField(source="room_id")
    subscription = serializers.IntegerField(source="subscription_id", allow_null=True)


class HourlySerializer(ReportRowSerializer):
    class Meta:
        model = HourlyReport
        fields = ["hour", "room", "subscription", "event_type", "published", "delivered", "attempts",
                  "failed_attempts", "retried", "dead_lettered", "expired", "success_rate", "attempts_per_delivered"]


class LatencySerializer(ReportRowSerializer):
    class Meta:
        model = LatencyReport
        fields = ["level", "hour", "room", "subscription", "event_type", "delivered", "latency_p50_ms",
                  "latency_p95_ms", "latency_p99_ms", "timed_attempts", "duration_p50_ms", "duration_p95_ms",
                  "duration_p99_ms", "duration_max_ms"]


class ErrorReportRowSerializer(ReportRowSerializer):
    class Meta:
        model = ErrorReport
        fields = ["hour", "room", "subscription", "outcome", "status_code", "failed_attempts"]


class RetryCostSerializer(serializers.Serializer):
    hour = serializers.DateTimeField()
    room = serializers.IntegerField(source="room_id")
    subscription = serializers.IntegerField(source="subscription_id", allow_null=True, required=False)
    publishes = serializers.IntegerField()
    replays = serializers.IntegerField()
    retries = serializers.IntegerField()
    dead_letters = serializers.IntegerField()
    rechecks = serializers.IntegerField()
    retry_delay_ms = serializers.IntegerField()
    retry_attempts = serializers.IntegerField()
    extra_sends_per_publish = serializers.SerializerMethodField()

    def get_extra_sends_per_publish(self, row: dict[str, int]) -> float | None:
        """Retry sends per first publish: the broker traffic the EBR settings added."""
        return row["retries"] / row["publishes"] if row["publishes"] else None


class EndpointSerializer(serializers.Serializer):
    room = serializers.IntegerField(source="room_id")
    subscription = serializers.IntegerField(source="subscription_id")
    name = serializers.CharField(allow_null=True)
    push_url = serializers.CharField(allow_null=True)
    timed_attempts = serializers.IntegerField()
    worst_hour_p50_ms = serializers.IntegerField(allow_null=True)
    worst_hour_p95_ms = serializers.IntegerField(allow_null=True)
    worst_hour_p99_ms = serializers.IntegerField(allow_null=True)
    duration_max_ms = serializers.IntegerField(allow_null=True)


class RunSerializer(serializers.ModelSerializer):
    """A report run; where it ran (`master`), what it recomputed (`scope`) and why it failed (`error`) are
    internal to the operators, so only admin keys see them (null for the others, context `internals`)."""

    INTERNAL = ("master", "scope", "error")

    master = serializers.CharField(allow_null=True, help_text="Admin keys only; null for room keys.")
    scope = serializers.CharField(allow_null=True, help_text="Admin keys only; null for room keys.")
    error = serializers.CharField(allow_null=True, help_text="Admin keys only; null for room keys.")

    class Meta:
        model = ReportRun
        fields = ["id", "status", "mode", "master", "window_start", "window_end", "requested_at", "started_at",
                  "heartbeat_at", "finished_at",
                  "progress", "stage", "scope", "hours_processed", "rows_written", "error", "watermark_at"]
        # Always in the reply, null while they do not apply (a run asked for has not started).
        read_only_fields = ["requested_at", "started_at", "heartbeat_at"]

    def to_representation(self, run: ReportRun) -> dict:
        data = super().to_representation(run)
        if not self.context.get("internals"):
            data.update(dict.fromkeys(self.INTERNAL))
        return data
