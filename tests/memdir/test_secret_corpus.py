"""The secret filter against a corpus: 21 kinds of planted credentials, six of each (126), in
memories and in session transcripts, and 500 tricky clean files.

- Memories: the push gate (fast rules + detect-secrets) flags every planted file on its line.
- Sessions: what memhub stores of a transcript (fast rules on the client and at ingest, then
  detect-secrets in the task) never holds a planted value in clear.
- Without the two rules added for sessions (credentials in URL query strings, quoted passwords
  that begin with a symbol) the gate misses exactly those two kinds: 12 of 126.
- No false positive in 500 tricky clean files, as memories or as transcripts.

Every credential is generated at test time in its provider's documented shape. Django-free.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable

import pytest

from memapp.memdir import secret_gate
from memapp.memdir.secret_gate import redact_with_gate, scan_for_push
from memapp.memdir.transcripts import parse_entry, redact_entry
from tests.memdir.test_secret_gate import detect_secrets_kinds
from tests.memdir.test_secret_rules import clean_memory_file, fake_tokens, plant
from tests.transcripts import Transcript

ALNUM = string.ascii_letters + string.digits
NEW_RULES = {"url-query-credential", "quoted-password"}
FAST_KINDS = [
    "aws-access-token", "gcp-api-key", "github-pat", "github-fine-grained-pat", "gitlab-pat",
    "slack-bot-token", "stripe-access-token", "anthropic-api-key", "openai-api-key",
    "sendgrid-api-token", "npm-access-token", "pypi-upload-token", "twilio-api-key",
    "huggingface-access-token", "private-key",
]  # fmt: skip
DETECT_SECRETS_KINDS = ["Secret Keyword", "AWS secret key", "JSON Web Token", "Basic Auth"]
SESSION_KINDS = ["url-query", "symbol-password"]
KINDS = FAST_KINDS + DETECT_SECRETS_KINDS + SESSION_KINDS
PER_KIND = 6


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _url_query(rng: random.Random) -> tuple[str, str]:
    value = _pick(rng, ALNUM, 24)
    name = rng.choice(["access_token", "token", "key", "api_key", "sig", "client_secret"])
    host = rng.choice(["hooks.example.com/notify", "api.example.net/v2/events", "example.org/cb"])
    return f"Webhook: https://{host}?source=ci&{name}={value}", value


def _symbol_password(rng: random.Random) -> tuple[str, str]:
    value = rng.choice("%#!$@&*^") + _pick(rng, ALNUM + "!#%&*", 15)
    while sum([any(c.islower() for c in value), any(c.isupper() for c in value),
               any(c.isdigit() for c in value)]) < 2:  # fmt: skip
        value = value[0] + _pick(rng, ALNUM + "!#%&*", 15)
    name = rng.choice(["password", "db_password", "PASSWORD", "admin_pwd"])
    forms = [f'{name} = "{value}"', f"{name}: '{value}'", f'{{"{name}": "{value}"}}']
    return rng.choice(forms), value


def planted(kind: str, n: int) -> tuple[str, str]:
    """(a line holding the credential, the value that must never be stored in clear)."""
    rng = random.Random(f"{kind}-{n}")
    if kind in FAST_KINDS:
        token = fake_tokens(1000 + n)[kind]
        template = rng.choice(["export API_TOKEN={t}", "- CI reads `{t}`", '{{"token": "{t}"}}'])
        value = token.split("\n")[1] if kind == "private-key" else token
        return template.format(t=token), value
    if kind == "url-query":
        return _url_query(rng)
    if kind == "symbol-password":
        return _symbol_password(rng)
    lines = detect_secrets_kinds(2000 + n)
    line = lines["Basic Auth Credentials" if kind == "Basic Auth" else kind]
    if kind == "Basic Auth":
        return line, line.split("app:", 1)[1].split("@", 1)[0]
    if kind == "JSON Web Token":
        return line, line.split()[4]
    return line, line.split('"')[1]


def corpus() -> list[tuple[str, str, str]]:
    return [(kind, *planted(kind, n)) for kind in KINDS for n in range(PER_KIND)]


def tricky_line(rng: random.Random) -> str:
    """Lines that look like credentials to a careless rule and are not."""
    return rng.choice(
        [
            'password = "${DB_PASSWORD}"',
            'password: "<your password here>"',
            'PASSWORD = "%(password)s"',
            'password = "********"',
            'password = "%s" % secret',
            'pwd = "/home/Alice/src2"',
            'Set `password = "$DB_PASS"` in the template.',
            'password_min_length = "12"',
            "https://docs.example.com/search?q=token+rotation&page=2",
            'curl "https://api.example.com/v1/items?sort=desc&key=name"',
            "https://example.com/callback?code=abc&state=xyz",
            "The query string ?token= is rejected by the API since v2.",
            "https://grafana.example.com/d/abc?orgId=1&refresh=30s",
            "https://cdn.example.com/app.js?v=3f9a2c1b7e4d&integrity=sha384",
            'url = "https://api.example.com/v2/items?page_token=next&limit=50"',
            "TOKEN_URL=https://auth.example.com/oauth/token?grant_type=client_credentials",
            f"https://ci.example.com/job?run={rng.randint(100, 999)}&key=b-{rng.randint(1, 9)}",
        ]
    )


def tricky_clean_files(count: int = 500, seed: int = 1313) -> list[str]:
    rng = random.Random(seed)
    files = []
    for _ in range(count):
        lines = clean_memory_file(rng).split("\n")
        for _ in range(rng.randint(1, 4)):
            lines.insert(rng.randint(6, len(lines) - 1), tricky_line(rng))
        files.append("\n".join(lines))
    return files


def test_the_corpus_has_21_kinds_and_126_credentials():
    items = corpus()
    assert len(KINDS) == len(set(KINDS)) == 21
    assert len(items) == 126
    assert len({value for _, _, value in items}) == 126


def test_the_push_gate_flags_every_planted_memory_on_its_line():
    rng = random.Random(5)
    files, lines = {}, {}
    for i, (kind, line_text, _) in enumerate(corpus()):
        text, line = plant(clean_memory_file(rng), "", rng)
        rows = text.split("\n")
        rows[line - 1] = line_text
        files[f"{kind}/{i}.md"] = "\n".join(rows)
        lines[f"{kind}/{i}.md"] = line
    blocked = scan_for_push(files)
    missed = sorted(set(files) - set(blocked))
    assert missed == []
    for key, hits in blocked.items():
        assert lines[key] in {hit.line for hit in hits}, key


def _without_new_rules(files: dict[str, str]) -> set[str]:
    """What the gate flagged before the two session rules: its hits minus theirs."""
    return {
        key
        for key, hits in scan_for_push(files).items()
        if any(hit.rule_id not in NEW_RULES for hit in hits)
    }


def test_without_the_session_rules_the_gate_misses_exactly_those_two_kinds():
    files = {f"{kind}/{i}.md": f"# note\n{line}\n" for i, (kind, line, _) in enumerate(corpus())}
    missed = sorted(key.split("/")[0] for key in set(files) - _without_new_rules(files))
    assert missed == sorted(["url-query"] * 6 + ["symbol-password"] * 6)


def stored_session_text(transcript: Transcript) -> str:
    """What memhub keeps of a transcript: the fast rules on each entry (the client's upload and
    the server's ingest), then detect-secrets over each entry's text (the task)."""
    kept = []
    for raw in transcript.entries:
        clean, _ = redact_entry(raw)
        entry = parse_entry(clean)
        kept.append(redact_with_gate(entry.search_text)[0])
    return "\n".join(kept)


HOW: list[Callable[[Transcript, str], None]] = [
    lambda t, line: t.user(f"this is what I have in my config:\n{line}"),
    lambda t, line: t.tool_result(t.tool_use("Bash", {"command": "env"}), f"HOME=/x\n{line}\n"),
    lambda t, line: t.tool_result(t.tool_use("Read", {"file_path": "/app/.env"}), line),
    lambda t, line: t.assistant(f"The file says:\n\n{line}\n\nThat looks wrong."),
    lambda t, line: t.tool_use("Bash", {"command": f"echo '{line}' >> settings.ini"}),
]


def test_no_planted_credential_is_stored_in_clear_from_a_session():
    in_clear = []
    for i, (kind, line, value) in enumerate(corpus()):
        transcript = Transcript()
        transcript.user("Help me fix the deploy config.")
        HOW[i % len(HOW)](transcript, line)
        transcript.assistant("Let me look.")
        if value in stored_session_text(transcript):
            in_clear.append(kind)
    assert in_clear == []


@pytest.fixture(scope="module")
def tricky() -> list[str]:
    secret_gate.configure(entropy=False)
    return tricky_clean_files()


def test_no_false_positive_on_500_tricky_clean_memories(tricky):
    files = {f"notes/{i:04d}.md": text for i, text in enumerate(tricky)}
    assert len(files) == 500
    assert scan_for_push(files) == {}


def test_no_false_positive_on_500_tricky_clean_sessions(tricky):
    changed = []
    for i, text in enumerate(tricky):
        transcript = Transcript()
        transcript.user(text[: len(text) // 2])
        call = transcript.tool_use("Read", {"file_path": f"/docs/{i}.md"})
        transcript.tool_result(call, text[len(text) // 2 :])
        stored = stored_session_text(transcript)
        if "[REDACTED" in stored:
            changed.append(i)
    assert changed == []


def test_the_redacted_session_names_the_rule_and_stays_readable():
    transcript = Transcript()
    line, value = planted("url-query", 0)
    transcript.user(f"the webhook is {line.split(': ', 1)[1]}, please check it")
    stored = stored_session_text(transcript)
    assert value not in stored
    assert "[REDACTED:Credential in a URL query string], please check it" in stored
    assert json.dumps(stored)  # still plain text
