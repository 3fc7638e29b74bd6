"""Agent JSON validated at the boundary into plain values; unknown fields are an error."""

from __future__ import annotations

import copy

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memapp.memdir.frontmatter import MEMORY_TYPES
from memapp.stores.projects import canonical_ref, valid_project_key

STORE_SCOPES = ("private", "team")
RECALL_SCOPES = (*STORE_SCOPES, "both")  # named in the schema by ENUM_NAME_OVERRIDES
MEMORY_SCOPES = (*STORE_SCOPES, "agent")
AGENT_SCOPES = ("user", "project", "local")
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # what YAML or a reader takes as one


_CHECKSUM = "sha256:" + "3f" * 32


def _keyed(child: serializers.Field, example: dict, **kwargs) -> serializers.DictField:
    """A `DictField` whose schema carries `example`, so the API docs show real keys and values
    where Redoc would make up `{"property1": …}` (docs/design.md §22)."""

    values = {"type": "integer" if isinstance(child, serializers.IntegerField) else "string"}
    schema = {"type": "object", "additionalProperties": values, "example": example}

    @extend_schema_field(schema)
    class Keyed(serializers.DictField):
        pass

    return Keyed(child=child, **kwargs)


class Text(serializers.CharField):
    """A string field that takes a JSON string only: DRF's own turns ``5`` into ``"5"``, so a
    wrong type went through as text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictSerializer(serializers.Serializer):
    """Refuse fields the endpoint does not know, so a typo never silently does nothing.

    Each instance gets shallow copies of the declared fields, where DRF deep-copies them (which
    builds every field again, with its validators: a third of an agent request's validation
    time). Binding sets only the copy's own attributes; a nested serializer is still deep-copied.
    """

    def get_fields(self):
        return {
            name: copy.deepcopy(field)
            if isinstance(field, serializers.BaseSerializer)
            else copy.copy(field)
            for name, field in self._declared_fields.items()
        }

    def validate(self, attrs):
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return attrs


class StrictSerializerSchema(OpenApiSerializerExtension):
    """The schema says what `StrictSerializer` does: no properties beyond the listed ones."""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        schema["additionalProperties"] = False
        return schema


class ProjectRefSerializer(StrictSerializer):
    project = Text(
        max_length=255, help_text="Repo slug `owner/repo`, or the sanitized memory dir name."
    )
    project_dirname = Text(
        max_length=255,
        required=False,
        default="",
        allow_blank=True,
        help_text="The sanitized memory dir name, to link a discovered project to its slug.",
    )

    def validate_project(self, value: str) -> str:
        value = canonical_ref(value)  # `acme/app.git` and a remote URL are `acme/app`
        if not valid_project_key(value):
            raise serializers.ValidationError(
                "Use the repo slug `owner/repo` or the sanitized memory dir name (letters, "
                "digits and dashes)."
            )
        return value


class ResolveStoreSerializer(ProjectRefSerializer):
    scope = serializers.ChoiceField(choices=STORE_SCOPES)
    create = serializers.BooleanField(
        required=False,
        default=True,
        help_text="Create the store when it does not exist yet; with `false`, a missing store "
        "is a 404 `no_store` and nothing on the server changes (for dry runs).",
    )


class StoreSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = Text()
    label = Text()
    project = Text(source="project.key", allow_null=True, default=None)
    file_count = serializers.IntegerField()


# Responses: what the views return, so the schema describes it. The views build their dicts
# directly (no serializer on the hot path); tests/api/test_response_schemas.py keeps the two
# in step.


class StoreListSerializer(serializers.Serializer):
    stores = StoreSerializer(many=True)


class ErrorDetailSerializer(serializers.Serializer):
    code = Text()
    message = Text()
    details = serializers.JSONField()


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


class FileEntrySerializer(serializers.Serializer):
    key = Text()
    checksum = Text(help_text="`sha256:<hex>`")
    size = serializers.IntegerField(required=False, help_text="Absent for a `MEMORY.md`.")
    mtime_ms = serializers.IntegerField(required=False, help_text="Absent for a `MEMORY.md`.")
    name = Text()
    description = Text()
    type = serializers.ChoiceField(choices=list(MEMORY_TYPES), allow_null=True)


class FileListSerializer(serializers.Serializer):
    files = FileEntrySerializer(many=True)


class FileHashesSerializer(serializers.Serializer):
    checksums = _keyed(Text(), {"feedback_real_db.md": _CHECKSUM}, help_text="key → checksum")


class FileSerializer(serializers.Serializer):
    key = Text()
    content = Text()
    checksum = Text()
    mtime_ms = serializers.IntegerField()


class WriteResultSerializer(serializers.Serializer):
    written = serializers.ListField(child=Text())
    unchanged = serializers.ListField(child=Text())
    deleted = serializers.ListField(child=Text())


class FilePutResultSerializer(WriteResultSerializer):
    key = Text()
    checksum = Text()


class BatchResultSerializer(WriteResultSerializer):
    checksums = _keyed(
        Text(),
        {"feedback_real_db.md": _CHECKSUM},
        help_text="key → checksum of every topic file now stored",
    )


class RememberResultSerializer(serializers.Serializer):
    store = serializers.IntegerField()
    key = Text()
    checksum = Text()


class FileContentSerializer(StrictSerializer):
    content = Text(allow_blank=True, trim_whitespace=False)


class BatchSerializer(StrictSerializer):
    files = serializers.DictField(
        child=Text(allow_blank=True, trim_whitespace=False),
        required=False,
        default=dict,
        help_text="key → content; only changed keys need to be sent.",
    )
    delete = serializers.ListField(child=Text(), required=False, default=list)
    base = serializers.DictField(
        child=Text(allow_null=True),
        required=False,
        default=dict,
        help_text="key → checksum the client last saw (as If-Match per key).",
    )
    mtimes = serializers.DictField(
        child=serializers.IntegerField(min_value=0),
        required=False,
        default=dict,
        help_text="key → when the uploaded file was last modified on the agent's machine (ms "
        "since the epoch), kept as the file's mtime: a memory's age is the agent's.",
    )

    def validate(self, attrs):
        attrs = super().validate(attrs)
        for field, keys, message in (
            ("base", {*attrs["files"], *attrs["delete"]}, "Not uploaded or deleted in this batch."),
            ("mtimes", attrs["files"], "Not uploaded in this batch."),
        ):
            stray = sorted(set(attrs[field]) - set(keys))
            if stray:
                raise serializers.ValidationError({field: {key: [message] for key in stray}})
        # Written and then deleted, a file's new text would be gone the moment it arrived.
        both = sorted(set(attrs["files"]) & set(attrs["delete"]))
        if both:
            message = "Both uploaded and deleted in this batch: send one or the other."
            raise serializers.ValidationError({"delete": {key: [message] for key in both}})
        return attrs


class RememberSerializer(StrictSerializer):
    store = serializers.IntegerField(required=False)
    project = Text(max_length=255, required=False)
    scope = serializers.ChoiceField(choices=STORE_SCOPES, required=False, default="private")
    name = Text(max_length=200)
    description = Text(max_length=500)
    type = serializers.ChoiceField(choices=list(MEMORY_TYPES), required=False, allow_null=True)
    body = Text(allow_blank=True, trim_whitespace=False, required=False, default="")
    path = Text(required=False, help_text="Replace this file instead of creating.")

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if "store" not in attrs and "project" not in attrs:
            raise serializers.ValidationError("Give `store` or `project` (with `scope`).")
        for field in ("name", "description"):
            if any(mark in attrs[field] for mark in LINE_BREAKS):
                raise serializers.ValidationError({field: ["Must be one line."]})
        return attrs


class ForgetSerializer(StrictSerializer):
    store = serializers.IntegerField(required=False)
    project = Text(max_length=255, required=False)
    scope = serializers.ChoiceField(choices=STORE_SCOPES, required=False, default="private")
    path = Text()

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if "store" not in attrs and "project" not in attrs:
            raise serializers.ValidationError("Give `store` or `project` (with `scope`).")
        return attrs


class MemoryDirSerializer(ProjectRefSerializer):
    memory_dir = Text(
        max_length=4096,
        required=False,
        allow_blank=True,
        default="",
        help_text="The agent's local memory dir, named in the prompt instead of the server's.",
    )


class PromptSerializer(MemoryDirSerializer):
    agent_type = Text(
        max_length=255,
        required=False,
        allow_blank=True,
        default="",
        help_text="Serve this agent's own memory (docs/design.md §13) instead of the "
        "project's; `memory_dir` then names the agent's memory dir.",
    )
    agent_scope = serializers.ChoiceField(
        choices=AGENT_SCOPES, required=False, default="user", help_text="With `agent_type`."
    )


class RecallSerializer(PromptSerializer):
    query = Text(max_length=20_000)
    recent_tools = serializers.ListField(
        child=Text(max_length=200), required=False, default=list, max_length=100
    )
    already_surfaced = serializers.ListField(
        child=Text(max_length=4096),
        required=False,
        default=list,
        max_length=1000,
    )
    scope = serializers.ChoiceField(choices=RECALL_SCOPES, required=False, default="both")
    session_id = Text(max_length=200, required=False, allow_blank=True, default="")
    wait_ms = serializers.IntegerField(
        min_value=0,
        max_value=600_000,
        required=False,
        allow_null=True,
        default=None,
        help_text="How long the caller can wait for the answer. When the model selector cannot "
        "answer in that time, the offline picks are returned and the model's are kept for the "
        "next recall of the same query. Without it the model gets as long as it takes.",
    )


class SessionStartSerializer(MemoryDirSerializer):
    have = serializers.DictField(
        child=Text(max_length=80),
        required=False,
        default=dict,
        help_text="key → `sha256:<hex>` of each private memory file the agent holds.",
    )
    team_index = serializers.BooleanField(
        required=False,
        default=True,
        help_text="Include the team index (false when the agent has team memory of its own).",
    )
    session_id = Text(
        max_length=200, required=False, allow_blank=True, default="", help_text="The hook's."
    )
    source = Text(
        max_length=40,
        required=False,
        allow_blank=True,
        default="",
        help_text="The hook's `source`; `resume` and `compact` get the session's summary.",
    )


class SurfacedSerializer(StrictSerializer):
    session_id = Text(max_length=200)
    paths = serializers.ListField(child=Text(max_length=4096), min_length=1, max_length=1000)


class IndexInfoSerializer(serializers.Serializer):
    path = Text(help_text="As shown to the agent.")
    line_count = serializers.IntegerField(help_text="Before truncation.")
    byte_count = serializers.IntegerField(help_text="Before truncation.")
    was_line_truncated = serializers.BooleanField()
    was_byte_truncated = serializers.BooleanField()


class PromptResultSerializer(serializers.Serializer):
    text = Text()
    mode = serializers.ChoiceField(choices=["disabled", "individual", "combined", "daily-log"])
    sections = serializers.ListField(child=Text(), help_text="Headings, in order.")
    indexes = IndexInfoSerializer(many=True, help_text="Private first, then team.")


class RecalledMemorySerializer(serializers.Serializer):
    path = Text(help_text="As the agent names it (under `memory_dir` if given).")
    scope = serializers.ChoiceField(choices=MEMORY_SCOPES)
    type = serializers.ChoiceField(choices=list(MEMORY_TYPES), allow_null=True)
    name = Text(allow_null=True)
    description = Text(allow_null=True)
    mtime_ms = serializers.IntegerField()
    age = Text(help_text="`today`, `yesterday` or `N days ago`.")
    age_days = serializers.IntegerField()
    header = Text(help_text="The freshness header shown above the content.")
    content = Text(help_text="Cut to the surfacing budget.")
    truncated = serializers.BooleanField()
    reason = Text(help_text="Why it was picked.")


class RecallResultSerializer(serializers.Serializer):
    memories = RecalledMemorySerializer(many=True)
    rendered = Text(help_text="The memories as the prompt shows them.")
    selector = serializers.ChoiceField(choices=["offline", "llm", "disabled"])
    fallback_reason = Text(
        allow_null=True,
        help_text="Why the model's picks were not used: its error, or `pending: …` when it had "
        "not answered within `wait_ms`; or why nothing could be recalled (the caller is not a "
        "member of the project).",
    )


class WaitingSerializer(serializers.Serializer):
    kind = Text(help_text="`proposals`, `conflicts`, `blocked`, `snapshots`, …")
    label = Text(help_text="What waits, in words: `proposals to review`.")
    count = serializers.IntegerField(help_text="How many wait (never 0: those are left out).")
    url = serializers.URLField(help_text="The page where they are settled.")


class SessionStartResultSerializer(serializers.Serializer):
    store = serializers.IntegerField(
        allow_null=True, help_text="The private store; null when there is none yet."
    )
    checksums = _keyed(
        Text(),
        {"MEMORY.md": "sha256:" + "c4" * 32, "feedback_real_db.md": _CHECKSUM},
        help_text="key → checksum of every file of that store",
    )
    files = _keyed(
        Text(allow_blank=True),
        {"MEMORY.md": "- [Real database in tests](feedback_real_db.md) — no mocks\n"},
        help_text="key → content of each file whose checksum differs from `have`.",
    )
    mtimes = _keyed(
        serializers.IntegerField(),
        {"feedback_real_db.md": 1767225600000},
        help_text="key → when each file of `files` was last modified (ms since the epoch), to "
        "be kept as its mtime: the memory's age.",
    )
    partial = serializers.BooleanField(help_text="Some differing files were left out (size).")
    team_index = Text(allow_blank=True)
    waiting = WaitingSerializer(
        many=True, help_text="Each kind of thing with something waiting for the user's review."
    )
    notice = Text(allow_blank=True, help_text="One line saying what waits, or empty.")
    session_summary = Text(
        allow_blank=True,
        help_text="The session's summary so far, for a resumed or compacted session "
        "(docs/design.md §14.10).",
    )


class SurfacedResultSerializer(serializers.Serializer):
    added = serializers.IntegerField(help_text="Paths the session had not been shown yet.")


class TokenInfoSerializer(serializers.Serializer):
    name = Text()
    prefix = Text()
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)


class MeSerializer(serializers.Serializer):
    username = Text()
    token = TokenInfoSerializer(help_text="The token this request carries.")
    version = Text(help_text="memhub's version.")


class TextField(serializers.Field):
    """Text as sent, any text: the entry checks (docs/design.md §6a) judge NUL and size, with
    the codes clients rely on."""

    default_error_messages = {"not_text": "Must be text."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_text")
        return data

    def to_representation(self, value):
        return value


class TeamMemoryPutSerializer(StrictSerializer):
    """The team memory protocol's PUT body, exactly `{"entries": {key: text}}`."""

    entries = serializers.DictField(child=TextField())


# --- sessions, proposals and past-context search (docs/design.md §14) ------------------------


class SessionEntriesSerializer(PromptSerializer):
    entries = serializers.ListField(
        child=serializers.JSONField(allow_null=True),
        max_length=10_000,
        help_text="Transcript entries after the session's cursor, as the JSONL file holds them.",
    )
    cwd = Text(max_length=4096, required=False, allow_blank=True, default="")
    final = serializers.BooleanField(
        required=False, default=False, help_text="The session ended (SessionEnd)."
    )
    agent = serializers.ChoiceField(
        choices=["claude-code", "gemini-cli", "codex"],
        required=False,
        default="claude-code",
        help_text="The coding agent whose transcript this is; another agent's entries are "
        "converted to Claude Code's shape by the client.",
    )
    skipped = serializers.DictField(
        child=serializers.IntegerField(min_value=0, max_value=1_000_000),
        required=False,
        default=dict,
        help_text="Lines the client did not send, counted by reason.",
    )
    auto_dream = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The person's `autoDreamEnabled` (false: no scheduled consolidation).",
    )

    def validate_skipped(self, value: dict) -> dict:
        if len(value) > 20 or any(len(reason) > 40 for reason in value):
            raise serializers.ValidationError("At most 20 reasons of up to 40 characters.")
        return value


class SessionEntriesResultSerializer(serializers.Serializer):
    session = Text()
    received = serializers.IntegerField()
    stored = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    redacted = serializers.IntegerField(help_text="Secrets replaced by [REDACTED:<label>].")
    skipped = _keyed(serializers.IntegerField(), {"not_json": 2})
    entry_count = serializers.IntegerField()
    extraction = serializers.ChoiceField(
        choices=["off", "waiting", "queued", "trailing", "coalesced"],
        help_text="What the new turns did: nothing yet (waiting for N turns) or a run.",
    )
    summary = serializers.ChoiceField(
        choices=["off", "waiting", "queued", "coalesced"],
        help_text="The session's summary: not due yet, or an update queued.",
    )


class SessionSummarySerializer(serializers.Serializer):
    text = Text(allow_blank=True, help_text="Markdown, the fixed sections.")
    selector = Text(allow_blank=True, help_text="llm or offline")
    through = serializers.IntegerField(help_text="The last entry (seq) it has read.")
    updates = serializers.IntegerField()
    updated_at = serializers.DateTimeField(allow_null=True)
    error = Text(allow_blank=True, help_text="Why the last update failed.")


class SessionDetailSerializer(serializers.Serializer):
    session = Text()
    project = Text()
    title = Text(allow_blank=True)
    entry_count = serializers.IntegerField()
    tokens = serializers.IntegerField(help_text="Estimated: characters / 4.")
    skipped = _keyed(serializers.IntegerField(), {"not_json": 2})
    skip_reasons = serializers.ListField(
        child=Text(), help_text="Why lines were not kept, in sentences."
    )
    started_at = serializers.DateTimeField()
    last_entry_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    summary = SessionSummarySerializer(allow_null=True)


class ApproveSerializer(StrictSerializer):
    changes = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        allow_null=True,
        default=None,
        help_text="Ids of the changes to apply; all pending ones when absent.",
    )
    confirm = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Apply a consolidation that deletes more than a quarter of the store or "
        "empties its index.",
    )


class ProposalChangeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    action = serializers.ChoiceField(choices=["create", "update", "delete"])
    file = Text()
    name = Text()
    description = Text()
    type = Text(allow_null=True)
    body = Text(
        help_text="The proposed body; for a pending MEMORY.md, the index exactly as approving "
        "without `changes` (the changes ticked by default) writes it: merged with what changed "
        "in it since the run read it, fitted to the files that will exist."
    )
    scope = serializers.ChoiceField(
        choices=["private", "team", "agent"],
        help_text="The store the change is written to: the proposal's, unless the reviewer sent "
        "a new memory to their other store.",
    )
    reason = Text()
    status = Text()
    checks = serializers.JSONField(
        help_text="Each {code, level, message}. In a consolidation or distillation, a change "
        "with a `bad` or `ask` check is approved only when named in `changes`."
    )
    message = Text()


class ProposalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=["extraction", "consolidation", "distillation"])
    status = serializers.ChoiceField(choices=["pending", "applied", "rejected", "failed"])
    store = serializers.IntegerField()
    scope = Text()
    project = Text(allow_null=True)
    created_at = serializers.DateTimeField()
    sessions = serializers.ListField(child=Text())
    changes = ProposalChangeSerializer(many=True)
    dropped = serializers.JSONField()


class ProposalListSerializer(serializers.Serializer):
    proposals = ProposalSerializer(many=True)


class DecisionResultSerializer(serializers.Serializer):
    proposal = ProposalSerializer()
    applied = serializers.ListField(child=Text())
    conflicts = serializers.ListField(child=Text())
    refused = serializers.ListField(child=Text())
    skipped = serializers.ListField(child=Text())


class SearchHitSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["memory", "session", "summary"],
        help_text="A memory, a session's entry, or a session's summary (no `seq`).",
    )
    title = Text()
    snippet = Text(help_text="Matched words in **bold**.")
    score = serializers.FloatField()
    url = Text(help_text="Where a person reads it in memhub.")
    store = serializers.IntegerField(required=False)
    path = Text(required=False)
    session_id = Text(required=False)
    seq = serializers.IntegerField(required=False)
    when = serializers.DateTimeField(required=False, allow_null=True)


class SearchResultSerializer(serializers.Serializer):
    query = Text()
    memories = SearchHitSerializer(many=True)
    sessions = SearchHitSerializer(many=True)


def validated(serializer_class, data):
    """`data` checked by `serializer_class`: its validated data, or the API's 400 error."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
