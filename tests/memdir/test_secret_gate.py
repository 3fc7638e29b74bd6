"""The push gate: fast rules plus detect-secrets, configured once, cached by content hash.

Django-free (run with ``-p no:django``). Fake secrets are generated at test time.
"""

from __future__ import annotations

import base64
import json
import random
import string
import threading
import time
import uuid

import pytest
import requests
from detect_secrets.core import scan as ds_scan
from detect_secrets.settings import get_settings, transient_settings
from hypothesis import given, settings
from hypothesis import strategies as st

from memapp.memdir import detect_secrets_scan as engine
from memapp.memdir import secret_gate as secretgate
from memapp.memdir.secret_rules import RULES, SecretHit
from tests.memdir.test_secret_rules import (
    DESIGN_RULE_IDS,
    clean_memory_file,
    clean_memory_files,
    fake_tokens,
    plant,
)

DS = secretgate.DETECT_SECRETS_PREFIX


@pytest.fixture(autouse=True)
def default_gate():
    secretgate.configure(entropy=False)
    yield
    secretgate.configure(entropy=False)


@pytest.fixture
def fresh_gate(monkeypatch):
    """The gate as a new process has it: never configured, nothing cached."""
    monkeypatch.setattr(secretgate, "_entropy", None)
    monkeypatch.setattr(secretgate, "_caches", {})


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def detect_secrets_kinds(seed: int = 1) -> dict[str, str]:
    """Secrets only detect-secrets knows (no fixed token shape), each as a memory line."""
    rng = random.Random(seed)
    alnum = string.ascii_letters + string.digits
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": str(uuid.UUID(bytes=rng.randbytes(16))), "iat": 1712345678, "role": "ci"}
    jwt = f"{header}.{_b64url(json.dumps(claims).encode())}.{_b64url(rng.randbytes(32))}"
    password = "".join(rng.choice(alnum + "!#%&*") for _ in range(18))
    aws_secret = "".join(rng.choice(alnum + "/+") for _ in range(40))
    db_password = "".join(rng.choice(alnum) for _ in range(16))
    return {
        "Secret Keyword": f'password = "{password}"',
        "AWS secret key": f'aws_secret_access_key = "{aws_secret}"',
        "JSON Web Token": f"The session cookie was {jwt} when it broke.",
        "Basic Auth Credentials": f"DATABASE_URL=postgres://app:{db_password}@db.internal:5432/app",
    }


def test_it_flags_every_fast_rule_with_its_own_id_and_line():
    rng = random.Random(3)
    tokens = fake_tokens(5)
    files = {}
    expected = {}
    for rule_id in DESIGN_RULE_IDS:
        text, line = plant(clean_memory_file(rng), tokens[rule_id], rng)
        files[f"notes/{rule_id}.md"] = text
        expected[f"notes/{rule_id}.md"] = [SecretHit(rule_id, RULES[rule_id], line)]
    assert secretgate.scan_for_push(files) == expected


def test_a_clean_push_gives_an_empty_result():
    assert secretgate.scan_for_push({"a.md": "Nothing to see.\n", "b.md": ""}) == {}


# What each kind of detect_secrets_kinds is flagged as: a secret-named key given a value and a
# password in a URL are the fast rules' now (and reported once, by them); the others only
# detect-secrets knows.
GATE_FLAGS = {
    "Secret Keyword": ["secret-assignment"],
    "AWS secret key": ["secret-assignment"],
    "JSON Web Token": [DS + "JSON Web Token"],
    "Basic Auth Credentials": ["url-password"],
}


@pytest.mark.parametrize("kind", list(detect_secrets_kinds()))
def test_it_catches_what_no_token_shape_says(kind):
    rng = random.Random(kind)
    line_text = detect_secrets_kinds()[kind]
    text, line = plant(clean_memory_file(rng), "", rng)
    lines = text.split("\n")
    lines[line - 1] = line_text
    result = secretgate.scan_for_push({"memory/incident.md": "\n".join(lines)})
    hits = result["memory/incident.md"]
    assert [(hit.rule_id, hit.line) for hit in hits] == [(id, line) for id in GATE_FLAGS[kind]]


def test_no_hit_or_message_contains_the_value():
    secrets = {**detect_secrets_kinds(2), **fake_tokens(2)}
    files = {f"k{i}.md": f"# note\n{value}\n" for i, value in enumerate(secrets.values())}
    result = secretgate.scan_for_push(files)
    assert set(result) == set(files)
    shown = repr(result) + "\n".join(str(hit) for hits in result.values() for hit in hits)
    for value in secrets.values():
        for part in value.split():
            if len(part) >= 12 and any(c.isdigit() for c in part):
                assert part not in shown
                assert part[-10:] not in shown


def test_clean_memory_files_give_no_false_positives_with_the_default_config(capsys):
    files = {f"notes/{i:04d}.md": text for i, text in enumerate(clean_memory_files())}
    start = time.perf_counter()
    blocked = secretgate.scan_for_push(files)
    first = time.perf_counter() - start
    start = time.perf_counter()
    again = secretgate.scan_for_push(files)
    cached = time.perf_counter() - start
    with capsys.disabled():
        print(
            f"\ngate (fast rules + detect-secrets, no entropy): {len(files) / first:,.0f} files/s"
            f" first scan, {len(files) / cached:,.0f} files/s cached ({len(files)} files)"
        )
    assert blocked == again == {}


def test_the_entropy_plugins_are_off_unless_an_admin_turns_them_on():
    names = set(get_settings().plugins)
    assert not names & set(engine.ENTROPY_PLUGINS)
    assert {"KeywordDetector", "AWSKeyDetector", "JwtTokenDetector", "PrivateKeyDetector"} <= names
    checksum = 'checksum = "' + random.Random(1).randbytes(32).hex() + '"'
    assert secretgate.scan_for_push({"a.md": checksum}) == {}

    secretgate.configure(entropy=True)
    assert set(engine.ENTROPY_PLUGINS) <= set(get_settings().plugins)
    hits = secretgate.scan_for_push({"a.md": checksum})["a.md"]
    assert [hit.rule_id for hit in hits] == [DS + "Hex High Entropy String"]

    secretgate.configure(entropy=False)
    assert secretgate.scan_for_push({"a.md": checksum}) == {}


def test_it_configures_detect_secrets_once_for_many_threads(fresh_gate, monkeypatch):
    calls = []
    apply_settings = engine.apply_settings
    monkeypatch.setattr(
        engine,
        "apply_settings",
        lambda entropy: calls.append(entropy) or apply_settings(entropy),
    )
    line = detect_secrets_kinds()["JSON Web Token"]
    files = {f"{i}.md": f"note {i}\n{line}\n" for i in range(20)}
    results = []
    barrier = threading.Barrier(8)

    def push():
        barrier.wait()
        results.append(secretgate.scan_for_push(files))

    threads = [threading.Thread(target=push) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [False]
    expected = {key: [SecretHit(DS + "JSON Web Token", "JSON Web Token", 2)] for key in files}
    assert results == [expected] * 8


def test_configuring_again_with_the_same_flag_changes_nothing(monkeypatch):
    calls = []
    monkeypatch.setattr(engine, "apply_settings", calls.append)
    secretgate.configure(entropy=False)
    secretgate.configure()
    assert calls == []


def test_it_restores_its_configuration_when_something_swapped_the_global(fresh_gate):
    jwt_line = detect_secrets_kinds()["JSON Web Token"]
    # Someone else's code narrowing detect-secrets to one plugin for a while:
    with transient_settings({"plugins_used": [{"name": "KeywordDetector"}]}):
        hits = secretgate.scan_for_push({"a.md": jwt_line})["a.md"]
    assert [hit.rule_id for hit in hits] == [DS + "JSON Web Token"]


def test_the_cache_avoids_a_rescan(fresh_gate, monkeypatch):
    calls = []
    scan = engine.scan
    monkeypatch.setattr(
        engine,
        "scan",
        lambda text, filename: calls.append(filename) or scan(text, filename),
    )
    files = {f"{i}.md": clean_memory_file(random.Random(i)) for i in range(5)}
    files["bad.md"] = detect_secrets_kinds()["Secret Keyword"]
    first = secretgate.scan_for_push(files)
    scanned = len(calls)
    assert scanned >= len(files)
    assert secretgate.scan_for_push(files) == first
    assert secretgate.scan_for_push({"renamed.md": files["bad.md"]}) == {
        "renamed.md": first["bad.md"]
    }
    assert len(calls) == scanned
    secretgate.scan_for_push({"0.md": files["0.md"] + "one more line\n"})
    assert len(calls) > scanned


def test_an_allowlist_pragma_does_not_let_a_secret_through():
    line = detect_secrets_kinds()["Secret Keyword"] + "  # pragma: allowlist secret"
    assert [hit.line for hit in secretgate.scan_for_push({"a.md": f"x\n{line}\n"})["a.md"]] == [2]


@pytest.mark.parametrize("key", ["swagger-notes.md", "package-lock.json", "theme.css", "x.lock"])
def test_names_detect_secrets_would_skip_are_scanned_anyway(key):
    line = detect_secrets_kinds()["JSON Web Token"]
    assert secretgate.scan_for_push({key: line})[key][0].rule_id == DS + "JSON Web Token"


def test_secrets_are_never_sent_anywhere_to_be_verified(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("detect-secrets tried to verify a secret over the network")

    monkeypatch.setattr(requests.sessions.Session, "request", refuse)
    tokens = fake_tokens(8)
    text = "\n".join(tokens[rule] for rule in ("slack-bot-token", "stripe-access-token"))
    assert len(secretgate.scan_for_push({"a.md": text})["a.md"]) == 2


def test_it_agrees_with_detect_secrets_scan_file(tmp_path):
    kinds = detect_secrets_kinds(4)
    texts = [
        clean_memory_file(random.Random(9)),
        "---\nname: db\n---\n" + "\n".join(kinds.values()) + "\n",
        "host: db.internal\nuser: app\npassword: hunter2-but-longer\n",  # eager config pass
        "[database]\npassword = s3cr3t-value-here\n",
        # config-shaped without a keyword: the eager pass, which the gate then skips, finds
        # nothing either
        "[cache]\nhost = redis.internal\nttl = 300\nowner: Q8zLm2Tv9Px4Rw7K\n",
        *clean_memory_files(30, seed=5),
        # every provider shape: what the gate's prefilter lets through is what the plugins flag
        "# tokens\n" + "\n".join(f"- {token}" for token in fake_tokens(8).values()) + "\n",
    ]
    for i, text in enumerate(texts):
        path = tmp_path / f"note{i}.md"
        path.write_text(text)
        with secretgate._lock:
            expected = {
                (secret.line_number, DS + secret.type)
                for secret in ds_scan.scan_file(str(path))
                if not engine.is_documentation_example(secret)
            }
        hits = secretgate._detect_secrets_hits(text, f"note{i}.md")
        assert {(hit.line, hit.rule_id) for hit in hits} == expected, text
        assert expected or i != 3  # the INI file's password is found by both


def test_skipping_the_filters_of_a_file_no_plugin_flags_changes_no_answer():
    """The gate runs detect-secrets' own scan only on files a plugin flags: on clean files,
    on files with a secret of every kind, and on files whose keyword a filter drops, it
    answers what the library's scan answers, and most clean files take the shortcut."""
    texts = clean_memory_files()[:150] + list(detect_secrets_kinds().values())
    texts += ["password = get_secret()\n", 'token = request.headers["x"]\n', "api_key: ${KEY}\n"]
    for name in ("memory.md", "memory.yaml", "memory.py"):
        for text in texts:
            lines = list(enumerate(text.splitlines(keepends=True), 1))
            expected = list(ds_scan._process_line_based_plugins(lines, name))
            assert engine.scan_lines(lines, name) == expected, (name, text)
    clean = [list(enumerate(text.splitlines(keepends=True), 1)) for text in texts[:150]]
    shortcut = sum(not engine.any_plugin_flags(lines, "memory.md") for lines in clean)
    assert shortcut > len(clean) // 2, shortcut  # files made to look like secrets, even so


@pytest.mark.parametrize(
    "line",
    [
        'password = "[REDACTED:Password in quotes]" export DB_PASSWORD=Sup3r$ecretPa55!',
        'db_pass: "hunterfoo-but-longer", api_secret: "anotherfoo-one-here"',  # detect-secrets'
        'password = "hunterfoo-but-longer" secret_key = "anotherfoo-one-here" pwd = "third-one-x"',
    ],
)
def test_the_gate_redacts_every_value_on_a_line(line):
    redacted, hits = secretgate.redact_with_gate(f"notes\n{line}\n")
    for value in ("Sup3r$ecretPa55!", "hunterfoo", "anotherfoo", "third-one"):
        assert value not in redacted
    assert hits and all(hit.line == 2 for hit in hits)
    assert secretgate.scan_for_push({"t.md": redacted}) == {}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["password", "db_pass", "api_secret", "DB_PASSWORD", "note", "token"]),
            st.sampled_from([" = ", ": ", "="]),
            st.sampled_from(['"', "", "'"]),
            st.text(
                alphabet=string.ascii_letters + string.digits + "-_!$%", min_size=6, max_size=24
            ),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_the_gate_leaves_nothing_it_would_flag(parts):
    text = " ".join(f"{name}{sep}{q}{value}{q}" for name, sep, q, value in parts)
    redacted, _ = secretgate.redact_with_gate(text)
    assert secretgate.scan_for_push({"t.md": redacted}) == {}
