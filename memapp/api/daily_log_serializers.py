"""Daily-log bodies of the agent API, validated at the boundary (docs/design.md §14.8)."""

from __future__ import annotations

from rest_framework import serializers

from memapp.api.serializers import ProjectRefSerializer, StrictSerializer, Text
from memapp.memdir.daily_logs import MAX_LOG_LINE_BYTES
from memapp.memdir.frontmatter import MEMORY_TYPES


class LogAppendSerializer(ProjectRefSerializer):
    text = Text(
        max_length=MAX_LOG_LINE_BYTES * 2,
        trim_whitespace=False,
        help_text="One entry, one line, at most 4 KB as written.",
    )
    date = serializers.DateField(help_text="Today in the agent's own time zone (YYYY-MM-DD).")
    time = serializers.RegexField(
        r"\A(?:[01]?\d|2[0-3]):[0-5]\d\Z",
        required=False,
        allow_blank=True,
        default="",
        help_text="The agent's local time, HH:MM.",
    )
    type = serializers.ChoiceField(
        choices=MEMORY_TYPES, required=False, allow_blank=True, default=""
    )


class LogAppendResultSerializer(serializers.Serializer):
    store = serializers.IntegerField()
    key = Text()
    line = Text()
    checksum = Text()


class LogMergeSerializer(StrictSerializer):
    lines = serializers.ListField(
        child=Text(max_length=MAX_LOG_LINE_BYTES * 2, trim_whitespace=False),
        max_length=10_000,
        help_text="The lines of the agent's copy; those the server's copy lacks are appended.",
    )


class LogMergeResultSerializer(serializers.Serializer):
    key = Text()
    appended = serializers.IntegerField()
    checksum = Text()


class LogSerializer(serializers.Serializer):
    key = Text()
    day = serializers.DateField()
    checksum = Text()
    entries = serializers.IntegerField()


class LogListSerializer(serializers.Serializer):
    logs = LogSerializer(many=True)


class LogTextSerializer(serializers.Serializer):
    key = Text()
    content = Text()
    checksum = Text()
