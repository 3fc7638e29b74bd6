"""The fast secret rule set: one planted fake token per rule is caught on the right line, the
value never appears in a hit, and 500+ realistic clean memory files give no hit at all.

Every token here is generated at test time from the provider's documented shape (random
characters, never a real credential), so nothing secret-shaped is committed to the repository.
"""

from __future__ import annotations

import base64
import json
import random
import string
import time
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memapp.memdir import secret_rules as secretscan
from memapp.memdir.secret_rules import RULES, SecretHit, SecretScanCache, scan_text

HEX = "0123456789abcdef"
ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "_-"

DESIGN_RULE_IDS = [
    "aws-access-token", "gcp-api-key", "azure-ad-client-secret", "digitalocean-pat",
    "digitalocean-access-token", "anthropic-api-key", "anthropic-admin-api-key",
    "openai-api-key", "huggingface-access-token", "github-pat", "github-fine-grained-pat",
    "github-app-token", "github-oauth", "github-refresh-token", "gitlab-pat",
    "gitlab-deploy-token", "slack-bot-token", "slack-user-token", "slack-app-token",
    "twilio-api-key", "sendgrid-api-token", "npm-access-token", "pypi-upload-token",
    "databricks-api-token", "hashicorp-tf-api-token", "pulumi-api-token", "postman-api-token",
    "grafana-api-key", "grafana-cloud-api-token", "grafana-service-account-token",
    "sentry-user-token", "sentry-org-token", "stripe-access-token", "shopify-access-token",
    "shopify-shared-secret", "memhub-api-token", "private-key", "url-query-credential",
    "quoted-password",
    "command-line-password", "secret-assignment", "command-line-user-password",
    "authorization-header", "netrc-password", "url-password",
]  # fmt: skip


# --- fake tokens, one per rule, in each provider's documented shape -------------------------


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def fake_tokens(seed: int = 7) -> dict[str, str]:
    """A fresh fake token per rule id (deterministic for a seed, random-looking)."""
    rng = random.Random(seed)

    def pick(alphabet: str, n: int) -> str:
        return _pick(rng, alphabet, n)

    def digits(n: int) -> str:
        return pick(string.digits, n)

    grafana_key = json.dumps(
        {"k": pick(ALNUM, 32), "n": "ci-deploy", "id": 1}, separators=(",", ":")
    )
    grafana_cloud = json.dumps(
        {"o": digits(6), "n": "stack-481-hm-read", "k": pick(ALNUM, 32), "m": {"r": "eu"}},
        separators=(",", ":"),
    )
    sentry_claims = json.dumps(
        {
            "iat": 1712345678.1,
            "url": "https://sentry.io",
            "region_url": "https://de.sentry.io",
            "org": "acme",
        },
        separators=(",", ":"),
    )
    pem_body = _b64(rng.randbytes(600))
    pem_lines = "\n".join(pem_body[i : i + 64] for i in range(0, len(pem_body), 64))
    hf = pick(string.ascii_lowercase, 17) + pick(string.ascii_uppercase, 17)
    return {
        "aws-access-token": "AKIA" + pick(string.ascii_uppercase + "234567", 16),
        "gcp-api-key": "AIza" + pick(B64URL, 35),
        "azure-ad-client-secret": pick(ALNUM, 3) + digits(1) + "Q~" + pick(ALNUM + "_~.-", 34),
        "digitalocean-pat": "dop_v1_" + pick(HEX, 64),
        "digitalocean-access-token": "doo_v1_" + pick(HEX, 64),
        "anthropic-api-key": "sk-ant-api03-" + pick(B64URL, 93) + "AA",
        "anthropic-admin-api-key": "sk-ant-admin01-" + pick(B64URL, 93) + "AA",
        "openai-api-key": "sk-proj-" + pick(B64URL, 74) + "T3BlbkFJ" + pick(B64URL, 74),
        "huggingface-access-token": "hf_" + "".join(rng.sample(hf, len(hf))),
        "github-pat": "ghp_" + pick(ALNUM, 36),
        "github-fine-grained-pat": "github_pat_" + pick(ALNUM, 22) + "_" + pick(ALNUM, 59),
        "github-app-token": "ghs_" + pick(ALNUM, 36),
        "github-oauth": "gho_" + pick(ALNUM, 36),
        "github-refresh-token": "ghr_" + pick(ALNUM, 36),
        "gitlab-pat": "glpat-" + pick(B64URL, 20),
        "gitlab-deploy-token": "gldt-" + pick(B64URL, 20),
        "slack-bot-token": f"xoxb-{digits(12)}-{digits(13)}-{pick(ALNUM, 24)}",
        "slack-user-token": f"xoxp-{digits(12)}-{digits(12)}-{digits(13)}-{pick(HEX, 32)}",
        "slack-app-token": f"xapp-1-A0{pick(string.ascii_uppercase + string.digits, 9)}"
        f"-{digits(13)}-{pick(HEX, 64)}",
        "twilio-api-key": "SK" + pick(HEX, 32),
        "sendgrid-api-token": f"SG.{pick(B64URL, 22)}.{pick(B64URL, 43)}",
        "npm-access-token": "npm_" + pick(ALNUM, 36),
        "pypi-upload-token": "pypi-AgEIcHlwaS5vcmc" + pick(B64URL, 160),
        "databricks-api-token": "dapi" + pick(HEX, 32),
        "hashicorp-tf-api-token": f"{pick(ALNUM, 14)}.atlasv1.{pick(ALNUM + '_-', 67)}",
        "pulumi-api-token": "pul-" + pick(HEX, 40),
        "postman-api-token": f"PMAK-{pick(HEX, 24)}-{pick(HEX, 34)}",
        "grafana-api-key": _b64(grafana_key.encode()).rstrip("="),
        "grafana-cloud-api-token": "glc_" + _b64(grafana_cloud.encode()),
        "grafana-service-account-token": f"glsa_{pick(ALNUM, 32)}_{pick(HEX, 8)}",
        "sentry-user-token": "sntryu_" + pick(HEX, 64),
        "sentry-org-token": f"sntrys_{_b64(sentry_claims.encode())}_{pick(ALNUM + '+/', 43)}",
        "stripe-access-token": "sk_live_" + pick(ALNUM, 99),
        "shopify-access-token": "shpat_" + pick(HEX, 32),
        "shopify-shared-secret": "shpss_" + pick(HEX, 32),
        "memhub-api-token": "mh_" + pick(B64URL, 43),
        "private-key": f"-----BEGIN RSA PRIVATE KEY-----\n{pem_lines}\n"
        "-----END RSA PRIVATE KEY-----",
        "url-query-credential": "https://hooks.example.com/notify?source=ci&access_token="
        + pick(ALNUM, 24),
        "quoted-password": 'password="%'
        + pick(string.ascii_uppercase, 3)
        + pick(string.ascii_lowercase, 4)
        + digits(3)
        + pick(ALNUM + "!#&*", 6)
        + '"',
        "secret-assignment": "DB_PASSWORD="
        + pick(string.ascii_uppercase, 3)
        + pick(string.ascii_lowercase, 6)
        + digits(3)
        + pick(ALNUM + "!$%", 6),
        "command-line-password": "docker login -u deploy -p dckr_pat_" + pick(B64URL, 27),
        "command-line-user-password": "curl -u deploy:"
        + pick(string.ascii_lowercase, 4)
        + digits(2)
        + pick(ALNUM, 8),
        "authorization-header": '"Authorization": "Bearer ' + pick(B64URL, 40) + '"',
        "netrc-password": "machine api.heroku.com login deploy@example.com password "
        + pick(ALNUM, 24),
        "url-password": "redis://:" + pick(ALNUM, 20) + "@cache.internal:6379/0",
    }


# How a token might sit on a line in a memory an agent wrote.
PLANTINGS = [
    "export {name}={token}",
    "- The CI job reads `{token}` from the runner's env ({name}).",
    '{{"{name}": "{token}"}}',
    "{name}: {token}",
    "curl -H 'Authorization: Bearer {token}' https://api.internal.example/v1/health",
]


# --- a corpus of realistic, clean memory files -------------------------------------------

_TOPICS = [
    ("deploy pipeline", "project"), ("flaky integration tests", "feedback"),
    ("database migrations", "project"), ("code review preferences", "feedback"),
    ("release checklist", "reference"), ("on-call runbook", "reference"),
    ("caching layer", "project"), ("frontend build", "project"),
    ("python style", "feedback"), ("user's role", "user"), ("API pagination", "reference"),
    ("search ranking", "project"), ("secrets handling policy", "feedback"),
    ("token rotation", "reference"), ("observability dashboards", "reference"),
]  # fmt: skip
_SERVICES = ["billing-api", "memhub", "ingest-worker", "auth-gateway", "search", "web"]
_PEOPLE = ["Priya", "Tomasz", "Aiko", "Mateo", "Fatima", "Oskar", "Lin", "Grace"]
_PHRASES = [
    "the retry loop backs off exponentially and gives up after five attempts",
    "we pin the base image so rebuilds are reproducible across runners",
    "keep migrations small and reversible because rollbacks happen under pressure",
    "prefer explicit timeouts on every outbound call including health checks",
    "the nightly job compacts the index and rotates the logs before the backup",
    "reviewers want one logical change per pull request with a short rationale",
    "feature flags are read once per request and cached for the rest of it",
]
_WORDS = [word for phrase in _PHRASES for word in phrase.split()]


def _sentence(rng: random.Random) -> str:
    words = rng.sample(_WORDS, rng.randint(8, 16))
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def _sha256(rng: random.Random) -> str:
    return rng.randbytes(32).hex()


def _git_sha(rng: random.Random) -> str:
    return rng.randbytes(20).hex()


def _clean_line(rng: random.Random) -> str:
    svc = rng.choice(_SERVICES)
    who = rng.choice(_PEOPLE)
    sha, commit = _sha256(rng), _git_sha(rng)
    version = f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}"
    uid = uuid.UUID(bytes=rng.randbytes(16), version=4)
    n = rng.randint(100, 9999)
    choices = [
        lambda: _sentence(rng),
        lambda: f"The release tarball checksum is `{sha}` (sha256, verified by {who}).",
        lambda: f"Pinned digest: `image: ghcr.io/acme/{svc}@sha256:{sha}`",
        lambda: f'checksum = "{sha}"',
        lambda: f"Fixed in {commit[:7]} (full `{commit}`), see PR #{n}.",
        lambda: f"Request id {uid} reproduces the 502 in staging.",
        lambda: f"Upgraded `{svc}` to v{version}; Django==5.2.{rng.randint(0, 19)} stays.",
        lambda: f"Docs: https://docs.example.com/{svc}/guide?page={rng.randint(1, 9)}#retries",
        lambda: f"PR: https://github.com/acme/{svc}/pull/{n} (merged by {who})",
        lambda: f"Logs live in `/var/log/{svc}/{svc}.log`; config in `~/.config/{svc}/app.toml`.",
        lambda: f"Run `git rebase -i HEAD~{rng.randint(2, 9)}` then `git push --force-with-lease`.",
        lambda: f"The api_key for {svc} comes from `settings.{svc.upper().replace('-', '_')}_KEY`.",
        lambda: "Password reset emails are rate limited to 3 per hour per account.",
        lambda: "Never paste a secret into memory; reference the vault path instead.",
        lambda: "GitHub tokens start with `ghp_` or `github_pat_`; rotate them from Settings.",
        lambda: "AWS docs use the placeholder key `AKIAIOSFODNN7EXAMPLE` in every sample.",
        lambda: "Public key for webhook signatures begins with `-----BEGIN PUBLIC KEY-----`.",
        lambda: f"TASK-{n} and SKU-{n} were closed; see the DISK usage alert for {svc}.",
        lambda: f"DATABASE_URL=postgres://app@db.internal:5432/{svc.replace('-', '_')}",
        lambda: f"integrity sha512-{_b64(rng.randbytes(64))} for left-pad@{version}",
        lambda: f"Call `hf_hub_download(repo_id='acme/{svc}-embeddings')` once at startup.",
        lambda: f"Set `npm_config_cache=/tmp/npm-{n}` in CI to avoid cache poisoning.",
        lambda: f"The Slack channel #{svc}-alerts gets the pager summaries at {n % 24:02d}:00.",
        lambda: f'ETag was `"sha256:{sha}"` before the migration and changed after.',
        lambda: f"Export with `AWS_PROFILE=staging aws s3 cp s3://acme-{svc}/dump-{n}.gz .`",
        lambda: f"{who} prefers squash merges; the merge commit `{commit[:12]}` shows why.",
        lambda: f"Token expiry is {rng.randint(5, 60)} minutes; refresh happens in the client.",
        lambda: "The secret name in the vault is `kv/memhub/prod/anthropic`, not the value.",
        lambda: f"Grafana dashboard: https://grafana.example.com/d/{uid.hex[:9]}/{svc}-latency",
    ]
    return rng.choice(choices)()


def _code_block(rng: random.Random) -> list[str]:
    kind = rng.randrange(4)
    if kind == 0:  # a base64 blob, e.g. an inline icon or a fixture
        blob = _b64(rng.randbytes(rng.randint(60, 180)))
        return ["```text", *[blob[i : i + 76] for i in range(0, len(blob), 76)], "```"]
    if kind == 1:
        svc = rng.choice(_SERVICES)
        return [
            "```python",
            f"client = httpx.Client(base_url='https://{svc}.internal', timeout=5.0)",
            "api_key = os.environ['ANTHROPIC_API_KEY']",
            "headers = {'Authorization': f'Bearer {api_key}'}",
            "```",
        ]
    if kind == 2:
        sha = _sha256(rng)
        return ["```console", "$ sha256sum dist/app.tar.gz", f"{sha}  dist/app.tar.gz", "```"]
    return [
        "```yaml",
        "env:",
        "  DJANGO_SETTINGS_MODULE: memapp.settings",
        "  ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}",
        f"  CACHE_KEY: deps-{_sha256(rng)[:16]}",
        "```",
    ]


def clean_memory_file(rng: random.Random) -> str:
    topic, kind = rng.choice(_TOPICS)
    lines = [
        "---",
        f"name: {topic}",
        f"description: what we learned about {topic} in {rng.choice(_SERVICES)}",
        f"type: {kind}",
        "---",
        "",
    ]
    while sum(len(line) + 1 for line in lines) < 1900:
        roll = rng.random()
        if roll < 0.12:
            lines += ["", f"## {rng.choice(['Context', 'Why', 'How to apply', 'Notes'])}", ""]
        elif roll < 0.22:
            lines += [*_code_block(rng), ""]
        elif roll < 0.3:
            lines.append(f"**Why:** {_sentence(rng)}")
        else:
            lines.append(("- " if rng.random() < 0.4 else "") + _clean_line(rng))
    return "\n".join(lines) + "\n"


def clean_memory_files(count: int = 600, seed: int = 2024) -> list[str]:
    rng = random.Random(seed)
    return [clean_memory_file(rng) for _ in range(count)]


def plant(text: str, token: str, rng: random.Random, name: str = "API_TOKEN") -> tuple[str, int]:
    """``text`` with ``token`` put on a new line somewhere in the body; returns (text, line)."""
    lines = text.split("\n")
    at = rng.randint(6, len(lines) - 1)  # after the frontmatter
    lines[at:at] = rng.choice(PLANTINGS).format(name=name, token=token).split("\n")
    return "\n".join(lines), at + 1


# --- tests ---------------------------------------------------------------------------------


def test_the_rule_set_is_exactly_the_designed_one():
    assert list(RULES) == DESIGN_RULE_IDS
    assert all(label.strip() for label in RULES.values())
    assert len(set(RULES.values())) == len(RULES)


def test_every_rule_has_a_planted_example():
    assert set(fake_tokens()) == set(RULES)


@pytest.mark.parametrize("rule_id", DESIGN_RULE_IDS)
def test_it_catches_each_planted_token_on_its_line(rule_id):
    rng = random.Random(rule_id)
    for seed in range(3):
        token = fake_tokens(seed)[rule_id]
        text, line = plant(clean_memory_file(rng), token, rng)
        assert scan_text(text) == [SecretHit(rule_id, RULES[rule_id], line)]


@pytest.mark.parametrize("rule_id", DESIGN_RULE_IDS)
def test_a_hit_never_contains_the_value(rule_id):
    token = fake_tokens()[rule_id]
    hits = scan_text(f"x\n{token}\n")
    assert [hit.rule_id for hit in hits] == [rule_id]
    secret_part = token.split("\n")[1] if rule_id == "private-key" else token
    shown = repr(hits) + str(hits[0]) + "".join(map(str, hits[0]))  # every field
    assert secret_part not in shown
    assert secret_part[-10:] not in shown
    assert str(hits[0]) == f"line 2: {RULES[rule_id]} ({rule_id})"


def test_it_finds_every_secret_in_a_file_holding_all_of_them():
    tokens = fake_tokens(11)
    text = "# dump\n" + "\n".join(f"{rule_id} -> {tokens[rule_id]}" for rule_id in RULES)
    hits = scan_text(text)
    assert {hit.rule_id for hit in hits} == set(RULES)
    assert hits == sorted(hits, key=lambda hit: (hit.line, hit.rule_id))
    assert hits[0].line == 2


def test_one_hit_per_rule_and_line():
    token = fake_tokens()["github-pat"]
    assert scan_text(f"{token} and again {token}") == [
        SecretHit("github-pat", RULES["github-pat"], 1)
    ]


def test_a_private_key_inside_a_json_string_is_caught():
    key = fake_tokens()["private-key"].replace("\n", "\\n")
    text = f'{{\n  "type": "service_account",\n  "private_key": "{key}"\n}}\n'
    assert scan_text(text) == [SecretHit("private-key", RULES["private-key"], 3)]


@pytest.mark.parametrize(
    "text",
    [
        "AWS docs: AKIAIOSFODNN7EXAMPLE",
        "placeholder ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "placeholder AKIAXXXXXXXXXXXXXXXX",
        "-----BEGIN OPENSSH PRIVATE KEY----- is how the file starts",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA...(redacted)\n-----END RSA PRIVATE KEY"
        "-----",
        "Anthropic keys look like sk-ant-api03-... and live in the vault.",
        "hf_hub_download_with_retries_and_backoff_xyz",
        "static void GLC_CreateLightmapTextureArray(void);",
        "sk_test_mode_is_enabled_for_this_environment",
        "the UPPERCASE_HEX SK0123456789ABCDEF0123456789ABCDEF0 is one char too long",
        "Send the token as an `Authorization: Bearer <token>` header (RFC 6750).",
        "headers = {'Authorization': f'Bearer {api_key}'}",
        'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user',
        "Authorization: Bearer ${{ secrets.DEPLOY_TOKEN }}",
        "Authorization: Bearer YOUR_ACCESS_TOKEN",
        "authorization: bearer access_token_from_the_login_step",
        "DATABASE_URL=postgres://app:${DB_PASSWORD}@db.internal:5432/app",
        "postgres://postgres:postgres@localhost:5432/test",
        "Clone with https://oauth2:$CI_JOB_TOKEN@gitlab.example.com/acme/app.git",
        "http://[::1]:8000/admin@home and http://localhost:8000/a:b@c",
        "Use the form redis://:<password>@host:6379 (see the runbook).",
    ],
)
def test_placeholders_and_near_misses_are_not_hits(text):
    assert scan_text(text) == []


def test_clean_memory_files_give_no_false_positives():
    files = clean_memory_files()
    assert len(files) >= 500
    assert 1500 < sum(map(len, files)) / len(files) < 2600
    false_positives = [(i, hit) for i, text in enumerate(files) for hit in scan_text(text)]
    assert false_positives == []


@given(st.text(alphabet=st.sampled_from(list("aQ~_-\nAKIghpsktx0123456789./+= ")), max_size=400))
def test_any_text_scans_without_error_into_well_formed_hits(text):
    hits = scan_text(text)
    assert all(hit.rule_id in RULES and 1 <= hit.line <= text.count("\n") + 1 for hit in hits)
    assert hits == sorted(set(hits), key=lambda hit: (hit.line, hit.rule_id))


def test_long_runs_of_token_markers_stay_linear():
    """Long runs of every rule's markers: four times the text costs about four times the CPU
    (a pattern that backtracks quadratically, sixteen)."""
    markers = {keyword for rule in secretscan._RULES for keyword in rule.keywords}

    def cost(runs: int) -> float:
        start = time.thread_time()  # this thread's CPU: other work on the machine not counted
        for marker in markers:
            scan_text(marker * runs)
            scan_text((marker + "a" * 79 + "-") * (runs // 10))
        return time.thread_time() - start

    assert cost(10_000) < 8 * cost(2_500)


def test_the_cache_scans_unchanged_content_once():
    calls = []

    def counting_scanner(text):
        calls.append(len(text))
        return scan_text(text)

    cache = SecretScanCache(counting_scanner)
    token = fake_tokens()["gitlab-pat"]
    first = cache.scan(f"a\n{token}\n")
    second = cache.scan(f"a\n{token}\n")
    assert first == second == [SecretHit("gitlab-pat", RULES["gitlab-pat"], 2)]
    assert len(calls) == 1
    cache.scan("something else")
    assert len(calls) == 2
    assert len(cache) == 2


def test_the_cache_forgets_the_least_recently_used_entry():
    calls = []
    cache = SecretScanCache(lambda text: calls.append(text) or [], maxsize=2)
    cache.scan("a")
    cache.scan("b")
    cache.scan("a")  # a is now the most recent
    cache.scan("c")  # evicts b
    cache.scan("a")
    cache.scan("b")
    assert calls == ["a", "b", "c", "b"]


def test_the_cache_keeps_digests_not_text():
    cache = SecretScanCache()
    token = fake_tokens()["npm-access-token"]
    cache.scan(token)
    assert token not in repr(vars(cache))
    cache.clear()
    assert len(cache) == 0


def test_a_lone_surrogate_does_not_break_the_scan():
    cache = SecretScanCache()
    assert cache.scan("broken \ud800 text") == []


def test_the_fast_rules_find_each_planted_secret_in_a_thousand_files():
    """One hit per planted secret among a thousand clean ~2 KB files (their speed is the team
    benchmark's "secret scan, fast rules" row, not a timed test)."""
    files = clean_memory_files(1000, seed=99)
    rng = random.Random(5)
    tokens = list(fake_tokens(3).values())
    for i in range(0, 1000, 11):  # ~90 planted secrets, as in the dependency benchmark
        files[i], _ = plant(files[i], tokens[i % len(tokens)], rng)
    hits = [i for i, text in enumerate(files) if scan_text(text)]
    assert hits == list(range(0, 1000, 11))
    assert sum(len(scan_text(files[i])) for i in hits) == len(hits)


# --- the shapes with no token format (issue 23): a table per rule, true and false ----------

# (line, the value that must be caught). Values are built here, never real credentials.
SHAPES_CAUGHT = {
    "secret-assignment": [
        ("AWS_SECRET_ACCESS_KEY=Zq3mK8pL2vN7xR4tW9yB1cF6hJ0sD5gA8eU3iO7w", "Zq3mK8pL2vN7"),
        ("DB_PASSWORD=Sup3rSecretPa55x", "Sup3rSecretPa55x"),
        ("export DB_PASSWORD=Sup3r$ecretPa55!", "Sup3r$ecretPa55!"),
        ("- [x](x.md) — password: Xk9mQ2vL7pTzQq", "Xk9mQ2vL7pTzQq"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7"),
        ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE aws s3 ls", "AKIAIOSFODNN7EXAMPLE"),
        ("  client_secret: 'Gh7_kq2LmZpx9Vb'", "Gh7_kq2LmZpx9Vb"),
        ('{"api_key": "q8Zr2LpT6mXv4Nc1"}', "q8Zr2LpT6mXv4Nc1"),
        ("SECRET_KEY_BASE=9f3b1c7e5a2d8f4b6c0e1a3d5f7b9c2e4a6d8f0b", "9f3b1c7e5a2d8f4b6c0e"),
        ("SLACK_WEBHOOK_TOKEN = 7d1e0a9c4b3f2e8d", "7d1e0a9c4b3f2e8d"),
        ("**Password:** `Tq8!mZ2pLx`", "Tq8!mZ2pLx"),
        ("passphrase=Correct-Horse-7-Battery", "Correct-Horse-7-Battery"),
        ("[db]\npassword = Rk4v.Lm9q/Zx2", "Rk4v.Lm9q/Zx2"),
        ("| DB_PASSWORD | `Vb6nT3qW8zKx2Lm` | staging |", "Vb6nT3qW8zKx2Lm"),
        ("| **Password** | Tq8!mZ2pLx |", "Tq8!mZ2pLx"),
    ],
    "command-line-password": [
        ("docker login -u deploy -p dckr_pat_2b3e36beeb386dfd registry", "dckr_pat_2b3e"),
        ("mysql -u root -pS3cr3t!xy shop", "S3cr3t!xy"),
        ("mysql --user=root --password=Hq7rT2pLk9 shop", "Hq7rT2pLk9"),
        ("gh auth login --token 4f8a1c9e7b2d3f6a0c5e", "4f8a1c9e7b2d3f6a0c5e"),
        ("memhub-agent login --token=mh_Zx8Lq2Vt7Pn4Rw1K", "mh_Zx8Lq2Vt7Pn4Rw1K"),
        ("cli --api-key 'Kq9!vT2mLp8Z' list", "Kq9!vT2mLp8Z"),
    ],
    "command-line-user-password": [
        ("curl -u deploy:Hx7pq2Lm9w https://ci.example.com", "Hx7pq2Lm9w"),
        ("curl --user 'admin:Pa55w0rd-2024' https://x", "Pa55w0rd-2024"),
        ("curl -u=ci:tr0ub4dor3x https://x", "tr0ub4dor3x"),
    ],
    "authorization-header": [
        ("curl -H 'Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0' https://x", "9f8e7d6c"),
        ("Authorization: Basic ZGVwbG95OlRxOHZSMm1LOXpMcFh3NA==", "ZGVwbG95OlRxOHZS"),
        ('headers = {"Authorization": "Token Lm4Qx8Rt2Vz6Kp0Wn3Ys"}', "Lm4Qx8Rt2Vz6Kp0Wn3Ys"),
    ],
    "netrc-password": [
        ("machine github.com\n  login deploy\n  password Tq8vR2mK9zLpXw4", "Tq8vR2mK9zLpXw4"),
        ("machine api.heroku.com login a@b.io password 0123abcd-4567-89ef", "0123abcd-4567"),
    ],
    "url-password": [
        ("REDIS_URL=redis://:Hk3nP9xQ2vL7mR4t@cache:6379/0", "Hk3nP9xQ2vL7mR4t"),
        ("git clone https://deploy:Tq8!vR2mK9z@git.example.com/acme/app.git", "Tq8!vR2mK9z"),
    ],
}

SHAPES_CLEAN = [
    'password = os.environ["DB_PASSWORD"]',
    "api_key = os.environ['ANTHROPIC_API_KEY']",
    'token = os.getenv("GITHUB_TOKEN")',
    "password = get_password()",
    "secret_key = settings.SECRET_KEY",
    "token = self.token_value",
    "DB_PASSWORD=${DB_PASSWORD}",
    "DB_PASSWORD=$DB_PASSWORD",
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "password: <your password>",
    "password: changeme1!",
    "password: ********",
    "token: xxxxxxxxxxxx",
    "API_KEY=sk-...",
    "api_key: YOUR_API_KEY_HERE",
    "PASSWORD_MIN_LENGTH=12",
    "max_tokens: 4096",
    "TOKEN_URL=https://auth.example.com/oauth/token",
    "DB_PASSWORD_FILE=/run/secrets/db_password",
    "| token | string | The access token the login step returned |",
    "| password | required | At least 12 characters, rotated yearly |",
    "| Secret | Kubernetes | where the chart reads it from |",
    "After login with your password reset link, nothing else is needed.",
    "machine github.com login deploy password $GITHUB_TOKEN",
    "password: see 1Password vault",
    "password: [REDACTED:Password in quotes]",
    "The password: rotated every quarter.",
    "Set the token: done by the deploy job.",
    "SECRET_NAME=prod/db/creds",
    "password_hash: pbkdf2_sha256",
    "page?page_token=next&limit=50",
    "The api_key for billing comes from `settings.BILLING_API_KEY`.",
    "AWS docs use the placeholder key `AKIAIOSFODNN7EXAMPLE` in every sample.",
    "mkdir -p src/Foo2",
    "docker run -u 1000:1000 -p 8080:80 img",
    'curl -u "$USER:$TOKEN" https://x',
    "chown -u www-data:www-data file",
    "git push -u origin main -p",
    "docker login -u deploy --password-stdin registry",
    "psql -U app -p 5432 shop",
    "ssh -p 2222 deploy@host",
    f"checksum = {'3f9a2c1b7e4d' * 5}",
    "Request id 550e8400-e29b-41d4-a716-446655440000 reproduces it.",
]


@pytest.mark.parametrize(
    ("rule_id", "line", "value"),
    [(rule_id, line, value) for rule_id, rows in SHAPES_CAUGHT.items() for line, value in rows],
)
def test_each_shape_is_caught_and_redacted(rule_id, line, value):
    text = f"notes\n{line}\n"
    hits = scan_text(text)
    assert [hit.rule_id for hit in hits] == [rule_id]
    assert hits[0].line == 2 + line.count("\n")
    redacted, _ = secretscan.redact_text(text)
    assert value not in redacted
    assert f"[REDACTED:{RULES[rule_id]}]" in redacted


@pytest.mark.parametrize("line", SHAPES_CLEAN)
def test_code_placeholders_and_prose_near_the_shapes_are_clean(line):
    assert scan_text(f"notes\n{line}\n") == []


def test_a_line_gives_the_same_answer_wherever_it_stands():
    rng = random.Random(23)
    for rows in SHAPES_CAUGHT.values():
        for line, _ in rows:
            if "\n" in line:
                continue
            expected = {hit.rule_id for hit in scan_text(line)}
            for _ in range(3):
                text, at = plant(clean_memory_file(rng), "", rng)
                lines = text.split("\n")
                lines[at - 1] = line
                hits = scan_text("\n".join(lines))
                assert {hit.rule_id for hit in hits if hit.line == at} == expected, line


def test_every_value_on_a_line_is_redacted():
    line = (
        'password = "[REDACTED:Password in quotes]" export DB_PASSWORD=Sup3r$ecretPa55! '
        "AWS_ACCESS_KEY_ID=AKIAZ7Q2M4N6P3R5T7V2 AWS_SECRET_ACCESS_KEY="
        "Zq3mK8pL2vN7xR4tW9yB1cF6hJ0sD5gA8eU3iO7w aws s3 ls"
    )
    redacted, hits = secretscan.redact_text(line)
    for value in ("Sup3r$ecretPa55!", "AKIAZ7Q2M4N6P3R5T7V2", "Zq3mK8pL2vN7xR4tW9yB1cF6"):
        assert value not in redacted
    assert {hit.rule_id for hit in hits} == {"secret-assignment", "aws-access-token"}
    assert redacted.endswith(" aws s3 ls")


_SECRET_NAMES = ["DB_PASSWORD", "api_key", "client_secret", "GITHUB_TOKEN", "password"]
_VALUE_ALPHABET = string.ascii_letters + string.digits + "!$%*+-./=@^_~:"


@given(
    st.lists(
        st.tuples(
            st.sampled_from(_SECRET_NAMES + ["--password", "-u deploy -p", "note", "x"]),
            st.sampled_from(["=", ": ", " = ", " "]),
            st.text(alphabet=_VALUE_ALPHABET, min_size=1, max_size=40),
        ),
        max_size=6,
    ),
    st.sampled_from([" ", "\n", " && ", "; "]),
)
def test_redaction_leaves_no_value_a_rule_matches(parts, glue):
    text = glue.join(f"{name}{sep}{value}" for name, sep, value in parts)
    redacted, hits = secretscan.redact_text(text)
    assert scan_text(redacted) == []
    assert bool(hits) == (redacted != text)


_GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@pytest.mark.parametrize(
    ("line", "rule_id"),
    [
        (f"token {_GITHUB[:8]}\u200b{_GITHUB[8:]} from the wiki", "github-pat"),
        (f"token {_GITHUB[:8]}\u00ad{_GITHUB[8:20]}\u2060{_GITHUB[20:]} here", "github-pat"),
        (f"トークン：{_full_width(_GITHUB)}。", "github-pat"),
        ("export DB_PASSWORD=\u00a0Sup3r$ecretPa55!", "secret-assignment"),
        (_full_width("password: Sup3r$ecretPa55!"), "secret-assignment"),
    ],
)
def test_a_secret_hidden_by_invisible_or_look_alike_characters_is_caught_and_redacted(
    line, rule_id
):
    """Copied from a chat or a web page (a zero-width space, a soft hyphen), or written in
    full-width letters, a token still reads as one to a person and to a model."""
    text = f"notes\n{line}\nend"
    assert [(hit.rule_id, hit.line) for hit in scan_text(text)] == [(rule_id, 2)]
    redacted, hits = secretscan.redact_text(text)
    assert [hit.rule_id for hit in hits] == [rule_id]
    assert scan_text(redacted) == []
    assert redacted.startswith("notes\n") and redacted.endswith("\nend")
    for part in ("Sup3r", "E5f6G7", _full_width("E5f6G7")):
        assert part not in redacted


def test_text_in_full_width_punctuation_is_no_secret():
    text = "デプロイ（本番）は金曜日、ＣＩ（２時間）のあと。\n"
    text += "ｐａｓｓｗｏｒｄ ポリシーは ｗｉｋｉ に。"
    assert scan_text(text) == []


@pytest.mark.parametrize(
    ("before", "after"),
    [("\u200b", ""), ("", "\u200b"), ("\u200b\u200b", "\u00ad"), ("x\u200b ", " \ufeff")],
)
def test_a_hidden_secret_is_redacted_exactly_where_it_stands(before, after):
    """Invisible characters beside a token hidden by one stay where they were; the token and
    those inside it go (offsets in the folded text map back to the text as written)."""
    hidden = f"{_GITHUB[:10]}\u200b\u200d{_GITHUB[10:30]}\u00ad{_GITHUB[30:]}"
    redacted, _ = secretscan.redact_text(f"start {before}{hidden}{after} end")
    assert redacted == f"start {before}[REDACTED:GitHub personal access token]{after} end"
