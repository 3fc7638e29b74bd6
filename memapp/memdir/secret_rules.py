"""The fast secret rule set: high-confidence token shapes, checked on every save
(docs/design.md §10a).

Each rule is one provider's documented token format (rule ids as in gitleaks). A hit names the
rule, its label and the line, never the value: a :class:`SecretHit` is safe to log, show, store
in an event or send back in an error.

Speed comes from a keyword prefilter: every token format starts with a fixed marker (``ghp_``,
``AKIA``, ``xoxb-`` …), and a rule's regex only runs on a text that contains one of its
markers, so a clean file costs a few substring searches. Results are cached by content hash in
:class:`SecretScanCache`, so an unchanged file is never scanned twice.

The rules lean towards catching: where a provider may lengthen its tokens the length is a lower
bound, not an exact count. Two cheap checks on each match keep documentation placeholders out
(``ghp_xxxxxxxx…``, AWS's ``AKIAIOSFODNN7EXAMPLE``): a minimum Shannon entropy and, for the
shorter formats, a mix of character classes that random tokens always have.
"""

from __future__ import annotations

import functools
import math
import re
from _thread import allocate_lock  # `threading`'s Lock, without loading `threading`
from bisect import bisect_right
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence

from memapp.memdir.digests import sha256
from memapp.memdir.records import Record

__all__ = [
    "REDACTED",
    "RULES",
    "SecretHit",
    "SecretScanCache",
    "place",
    "redact_text",
    "redaction",
    "scan_name",
    "scan_text",
]


class SecretHit(Record):  # not a dataclass: the Stop hook loads this (docs/scaling.md)
    """One secret found: which rule, its label and the line (from 1). Never the value."""

    rule_id: str
    label: str
    line: int

    def __str__(self) -> str:
        return f"{place(self.line)}: {self.label} ({self.rule_id})"


REDACTED = "[REDACTED:"  # how both layers mark what they took out of a text


def redaction(label: str) -> str:
    """What stands in a redacted text for a secret of the kind `label` names."""
    return f"{REDACTED}{label}]"


def place(line: int, *, on: bool = False) -> str:
    """Where a hit is, as a person reads it: ``line 3`` (``on line 3`` with `on`), or ``in its
    name`` (line 0, what :func:`scan_name` reports)."""
    if not line:
        return "in its name"
    return f"on line {line}" if on else f"line {line}"


class _Rule(Record):
    id: str
    label: str
    keywords: tuple[str, ...]  # case-sensitive markers; the regex runs only if one is present
    source: str  # the regex, compiled on first use: most texts have none of a rule's keywords
    min_entropy: float = 3.0  # Shannon entropy of the whole match, in bits per character
    mixed: bool = False  # the match must mix at least two of lower case, upper case, digits
    check: Callable[[str], bool] | None = None
    group: int | str = 0  # the part of the match that is the secret (checked and redacted)
    generic: bool = False  # a shape, not a provider's format: a provider rule's hit wins
    # The keywords are lower-case words the match starts with, found in the ASCII-lowered
    # text; the regex is tried at each (for case-insensitive names such as `password`).
    anchored: bool = False

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.source)


@functools.cache
def _compiled(source: str) -> re.Pattern[str]:
    return re.compile(source)


# Boundaries: a token must not be glued to the end of a longer identifier or word.
_NOT_AFTER_WORD = r"(?<![A-Za-z0-9_])"
_NOT_BEFORE_WORD = r"(?![A-Za-z0-9_])"
_B64URL = r"[A-Za-z0-9_-]"
_PEM_GAP = r"(?:\s|\\[nr])*"  # real line breaks, or escaped ones inside a JSON/YAML string


def _rule(
    id: str,
    label: str,
    keywords: tuple[str, ...],
    pattern: str,
    *,
    min_entropy: float = 3.0,
    mixed: bool = False,
    check: Callable[[str], bool] | None = None,
    group: int | str = 0,
    generic: bool = False,
    anchored: bool = False,
) -> _Rule:
    return _Rule(
        id,
        label,
        keywords,
        pattern,
        min_entropy,
        mixed,
        check,
        group,
        generic,
        anchored,
    )


def _has_both_cases(token: str) -> bool:
    return any(c.islower() for c in token) and any(c.isupper() for c in token)


def _not_a_placeholder(value: str) -> bool:
    # Templates and examples (`${DB_PASSWORD}`, `%(password)s`, `{{ secret }}`, `$TOKEN`,
    # `YOUR_API_KEY`, `xxxxxxxx`, `ab****yz`, `sk-...`) name a secret without holding one.
    # AWS's documentation keys (…EXAMPLE, …EXAMPLEKEY) are not placeholders: pasted into a
    # memory or a log as a value they read as a working credential (docs/design.md §10a).
    if re.fullmatch(r"\$\{.*\}|\$[A-Za-z_]\w*|%\(\w+\)s|%s|\{\{.*\}\}|<.*>", value):
        return False
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return False
    if "example" in lowered and "EXAMPLE" not in value:
        return False
    return len(set(value)) > 3


_PLACEHOLDER_WORDS = (
    *("your", "placeholder", "redacted", "changeme", "change_me", "1password"),
    *("xxx", "***", "...", "\u2026"),
)


def _classes(token: str) -> int:
    return (
        any(c.islower() for c in token)
        + any(c.isupper() for c in token)
        + any(c.isdigit() for c in token)
        + any(not c.isalnum() for c in token)
    )


def _quoted_password(value: str) -> bool:
    # A path (`pwd = "/home/Ana/src2"`) or a URL is not a password.
    if value.startswith(("/", "~/", "./", "../")) or "://" in value:
        return False
    return _not_a_placeholder(value) and _classes(value) >= 3


def _not_aws_example(token: str) -> bool:
    # AWS documentation keys all end in EXAMPLE (AKIAIOSFODNN7EXAMPLE).
    return not token.endswith("EXAMPLE")


# The three patterns below are sources, compiled on first use by `_compiled` as the rules' are
# (a Stop hook whose new entries hold no secret-like value compiles none of them).
# A value that is code, not a secret: a constant or variable name (`DB_PASSWORD_2`,
# `db_password`), a dotted reference (`settings.SECRET_KEY`, `self.token`), a word list
# (`read-only`). Random tokens in these shapes carry digits, so three digits or more make it
# a value again (a hex token, `AKIA…`).
_CODE_NAME = (
    r"[A-Z][A-Z0-9_]*|[a-z][a-z0-9_]*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[a-z]+(?:-[a-z0-9]+)+"
)


# AWS's documentation key id (AKIAIOSFODNN7EXAMPLE) quoted in prose is documentation; given to
# a key (`AWS_ACCESS_KEY_ID=…`, `aws_access_key_id: …`) it is used as a credential, and is one.
_AWS_KEY_ID = r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"


# `?page_token=next&limit=50`: a URL's query string, which `url-query-credential` judges.
_QUERY_STRING = r"&[\w.-]+="


def _assigned_secret(value: str) -> bool:
    """Whether the value given to a secret-named key or option is a secret, not a name, a
    path, a reference or a placeholder: eight characters or more mixing three character
    classes, or sixteen or more of letters and digits that look random."""
    if len(value) < 8 or value.startswith(("/", "~/", "./", "../")) or "://" in value:
        return False
    if not _not_a_placeholder(value) or _compiled(_QUERY_STRING).search(value):
        return False
    if _compiled(_CODE_NAME).fullmatch(value) and sum(c.isdigit() for c in value) < 3:
        return _compiled(_AWS_KEY_ID).fullmatch(value) is not None
    if _classes(value) >= 3:
        return True
    alpha, digit = any(c.isalpha() for c in value), any(c.isdigit() for c in value)
    return len(value) >= 16 and alpha and digit and _entropy(value) >= 3.0


def _user_password(value: str) -> bool:
    # `-u user:pass`: the shape itself says credential; `-u 1000:1000`, `-u www-data:www-data`
    # and `-u "$USER:$TOKEN"` are not.
    if len(value) < 6 or not _not_a_placeholder(value):
        return False
    core = value.replace("-", "").replace("_", "").replace(".", "")
    return any(c.isalpha() for c in value) and _classes(core) >= 2


# Secret-named keys, as environment variables, YAML, INI, TOML, JSON or keyword arguments name
# them: the name ends in one of these words (`DB_PASSWORD`, `GITHUB_TOKEN`, `OPENAI_API_KEY`,
# `client_secret`, `aws_secret_access_key`, `SECRET_KEY_BASE`, `password2`).
_SECRET_NAME = (
    r"(?i:secret|password|passwd|passphrase|pwd|token|api[_-]?key|apikey"
    r"|access[_-]?key(?:[_-]?id)?"
    r"|private[_-]?key|auth[_-]?key)"
    r"(?i:[_.-](?:key|base|value|token|access[_-]?key)){0,2}(?:[_-]?[0-9]{1,3})?"
    r"(?![A-Za-z0-9_.-])"
)
# An unquoted (or singly quoted) value without spaces, brackets or braces (so code that reads a
# variable, `os.environ["DB_PASSWORD"]`, `getenv(…)`, `${VAR}`, `<token>`, is not one), ending
# where the value ends.
_VALUE = r"(?P<value>[^\s\"'`()\[\]{}<>,;]{8,256}+)"
_VALUE_END = r"(?![^\s,;)\]}\"'`])"


def _value_rule(
    id: str, label: str, keywords: tuple[str, ...], pattern: str, *, anchored: bool = False
) -> _Rule:
    """A rule for a credential no token format names (a secret-named key's value, an
    option's, an Authorization header's, a .netrc or URL password): its `value` group, judged
    as `_assigned_secret` judges a value, reported after a provider's rule for the same span."""
    return _rule(
        id,
        label,
        keywords,
        pattern,
        min_entropy=2.5,
        check=_assigned_secret,
        group="value",
        generic=True,
        anchored=anchored,
    )


_RULES: tuple[_Rule, ...] = (
    # AWS access key ids: 4-letter kind (AKIA long-term, ASIA temporary STS, ABIA STS bearer,
    # ACCA context-specific) + 16 upper-case base32 characters.
    _rule(
        "aws-access-token",
        "AWS access key ID",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        r"(?<![A-Za-z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        check=_not_aws_example,
    ),
    # Google API keys: "AIza" + 35 URL-safe base64 characters (39 in all).
    _rule(
        "gcp-api-key",
        "Google Cloud API key",
        ("AIza",),
        rf"(?<![A-Za-z0-9_-])AIza{_B64URL}{{35}}(?![A-Za-z0-9_-])",
        min_entropy=3.5,
    ),
    # Microsoft Entra ID (Azure AD) client secrets: 3 characters, a digit, "Q~", 31–34 more.
    _rule(
        "azure-ad-client-secret",
        "Azure AD client secret",
        ("Q~",),
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
    ),
    # DigitalOcean: "dop_v1_" personal access tokens, "doo_v1_"/"dor_v1_" OAuth tokens;
    # 64 lower-case hex characters each.
    _rule(
        "digitalocean-pat",
        "DigitalOcean personal access token",
        ("dop_v1_",),
        r"dop_v1_[a-f0-9]{64}",
    ),
    _rule(
        "digitalocean-access-token",
        "DigitalOcean OAuth token",
        ("doo_v1_", "dor_v1_"),
        r"do[or]_v1_[a-f0-9]{64}",
    ),
    # Anthropic: "sk-ant-api03-" + 93 characters + "AA" (108 in all). OAuth access and refresh
    # tokens ("sk-ant-oat01-", "sk-ant-ort01-", as Claude Code stores them) are caught here too.
    _rule(
        "anthropic-api-key",
        "Anthropic API key",
        ("sk-ant-",),
        rf"sk-ant-(?:api|oat|ort)\d\d-{_B64URL}{{40,}}",
    ),
    _rule(
        "anthropic-admin-api-key",
        "Anthropic admin API key",
        ("sk-ant-admin",),
        rf"sk-ant-admin\d\d-{_B64URL}{{40,}}",
    ),
    # OpenAI: project/service-account/admin keys "sk-proj-…" (and older "sk-…") carry the
    # base64 of "OpenAI" ("T3BlbkFJ") in the middle, 20 to 74 characters in. The run before
    # it is bounded so a long "sk-sk-sk-…" cannot make the search quadratic.
    _rule(
        "openai-api-key",
        "OpenAI API key",
        ("sk-",),
        r"(?<![A-Za-z0-9])sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"
        r"|[A-Za-z0-9_-]{16,80}T3BlbkFJ[A-Za-z0-9_-]{16,})",
    ),
    # Hugging Face user access tokens: "hf_" + 34 mixed-case letters.
    _rule(
        "huggingface-access-token",
        "Hugging Face access token",
        ("hf_",),
        rf"{_NOT_AFTER_WORD}hf_[A-Za-z]{{34}}{_NOT_BEFORE_WORD}",
        check=_has_both_cases,
    ),
    # GitHub: 3-letter kind + "_" + 36 base62 characters; fine-grained PATs are
    # "github_pat_" + 22 + "_" + 59 characters.
    _rule(
        "github-pat",
        "GitHub personal access token",
        ("ghp_",),
        r"ghp_[A-Za-z0-9]{36}",
    ),
    _rule(
        "github-fine-grained-pat",
        "GitHub fine-grained personal access token",
        ("github_pat_",),
        r"github_pat_[A-Za-z0-9_]{50,}",
    ),
    _rule(
        "github-app-token",
        "GitHub App token",
        ("ghu_", "ghs_"),
        r"gh[us]_[A-Za-z0-9]{36}",
    ),
    _rule(
        "github-oauth",
        "GitHub OAuth access token",
        ("gho_",),
        r"gho_[A-Za-z0-9]{36}",
    ),
    _rule(
        "github-refresh-token",
        "GitHub refresh token",
        ("ghr_",),
        r"ghr_[A-Za-z0-9]{36}",
    ),
    # GitLab: "glpat-" / "gldt-" + 20 characters (longer in the newer routable format).
    _rule(
        "gitlab-pat",
        "GitLab personal access token",
        ("glpat-",),
        rf"glpat-{_B64URL}{{20,}}",
    ),
    _rule(
        "gitlab-deploy-token",
        "GitLab deploy token",
        ("gldt-",),
        rf"gldt-{_B64URL}{{20,}}",
    ),
    # Slack: bot "xoxb-", user "xoxp-" (and the legacy/config kinds xoxa, xoxe, xoxo, xoxr,
    # xoxs), app-level "xapp-"; dash-separated numeric ids then a random part.
    _rule(
        "slack-bot-token",
        "Slack bot token",
        ("xoxb-",),
        r"xoxb-[0-9]{8,14}-[A-Za-z0-9-]{16,}",
    ),
    _rule(
        "slack-user-token",
        "Slack user token",
        ("xoxa-", "xoxe-", "xoxo-", "xoxp-", "xoxr-", "xoxs-"),
        r"xox[aeoprs]-(?:[0-9]+-){0,3}[A-Za-z0-9-]{16,}",
        check=lambda token: any(c.isdigit() for c in token[5:]),
    ),
    _rule(
        "slack-app-token",
        "Slack app-level token",
        ("xapp-",),
        r"xapp-[0-9]-[A-Za-z0-9]+-[0-9]+-[A-Za-z0-9]{16,}",
    ),
    # Twilio API key SIDs: "SK" + 32 hex characters.
    _rule(
        "twilio-api-key",
        "Twilio API key",
        ("SK",),
        r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])",
    ),
    # SendGrid: "SG." + 22 + "." + 43 URL-safe base64 characters.
    _rule(
        "sendgrid-api-token",
        "SendGrid API key",
        ("SG.",),
        rf"(?<![A-Za-z0-9])SG\.{_B64URL}{{22}}\.{_B64URL}{{43}}",
    ),
    # npm: "npm_" + 36 base62 characters (30 random + a 6-character checksum).
    _rule(
        "npm-access-token",
        "npm access token",
        ("npm_",),
        rf"{_NOT_AFTER_WORD}npm_[A-Za-z0-9]{{36}}{_NOT_BEFORE_WORD}",
        mixed=True,
    ),
    # PyPI: "pypi-" + a base64 macaroon; its first bytes encode the version and location
    # ("AgEIcHlwaS5vcmc" is pypi.org, "AgENdGVzdC5weXBpLm9yZw" test.pypi.org).
    _rule(
        "pypi-upload-token",
        "PyPI upload token",
        ("pypi-AgE",),
        rf"pypi-AgE{_B64URL}{{50,}}",
    ),
    # Databricks personal access tokens: "dapi" + 32 hex characters (an optional "-N").
    _rule(
        "databricks-api-token",
        "Databricks API token",
        ("dapi",),
        r"(?<![A-Za-z0-9])dapi[a-f0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])",
    ),
    # HCP Terraform / Terraform Enterprise: 14 characters, ".atlasv1.", 60–70 more.
    _rule(
        "hashicorp-tf-api-token",
        "HashiCorp Terraform API token",
        (".atlasv1.",),
        r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}",
        min_entropy=3.5,
    ),
    # Pulumi access tokens: "pul-" + 40 hex characters.
    _rule(
        "pulumi-api-token",
        "Pulumi access token",
        ("pul-",),
        r"(?<![A-Za-z0-9])pul-[a-f0-9]{40}(?![A-Za-z0-9])",
    ),
    # Postman API keys: "PMAK-" + 24 hex + "-" + 34 hex.
    _rule(
        "postman-api-token",
        "Postman API key",
        ("PMAK-",),
        r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}",
    ),
    # Grafana: legacy API keys are base64 JSON starting {"k":" ("eyJrIjoi"); Grafana Cloud
    # tokens "glc_" + base64; service account tokens "glsa_" + 32 + "_" + 8 hex (a checksum).
    _rule(
        "grafana-api-key",
        "Grafana API key",
        ("eyJrIjoi",),
        r"eyJrIjoi[A-Za-z0-9+/]{60,}={0,3}",
    ),
    _rule(
        "grafana-cloud-api-token",
        "Grafana Cloud API token",
        ("glc_",),
        rf"{_NOT_AFTER_WORD}glc_[A-Za-z0-9+/]{{32,}}={{0,3}}",
        mixed=True,
    ),
    _rule(
        "grafana-service-account-token",
        "Grafana service account token",
        ("glsa_",),
        r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
    ),
    # Sentry: user auth tokens "sntryu_" + 64 hex; organization tokens "sntrys_" + base64 JSON
    # (starting {"iat": → "eyJpYXQiO") + "_" + a 43-character secret.
    _rule(
        "sentry-user-token",
        "Sentry user auth token",
        ("sntryu_",),
        r"sntryu_[a-f0-9]{64}",
    ),
    _rule(
        "sentry-org-token",
        "Sentry organization auth token",
        ("sntrys_",),
        r"sntrys_eyJ[A-Za-z0-9+/=]{20,}_[A-Za-z0-9+/]{43}",
    ),
    # Stripe secret and restricted keys: "sk_" / "rk_" + mode + "_" + 24 or more base62.
    _rule(
        "stripe-access-token",
        "Stripe secret key",
        ("sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"),
        r"(?<![A-Za-z0-9])[sr]k_(?:live|test|prod)_[A-Za-z0-9]{16,}",
        mixed=True,
    ),
    # Shopify: access tokens "shpat_" (admin), "shpca_" (custom app), "shppa_" (private app);
    # shared secrets "shpss_"; 32 hex characters each.
    _rule(
        "shopify-access-token",
        "Shopify access token",
        ("shpat_", "shpca_", "shppa_"),
        r"shp(?:at|ca|pa)_[a-fA-F0-9]{32}",
    ),
    _rule(
        "shopify-shared-secret",
        "Shopify shared secret",
        ("shpss_",),
        r"shpss_[a-fA-F0-9]{32}",
    ),
    # memhub's own API tokens: "mh_" + 43 URL-safe base64 characters (`secrets.token_urlsafe(32)`,
    # memapp/stores/tokens.py), which an agent that calls memhub's API writes down as readily
    # as any other (memhub).
    _rule(
        "memhub-api-token",
        "memhub API token",
        ("mh_",),
        rf"{_NOT_AFTER_WORD}mh_{_B64URL}{{43}}(?!{_B64URL})",
        mixed=True,
    ),
    # PEM/OpenSSH/PGP private keys: the BEGIN line followed by a base64 body (a header line
    # or two such as "Proc-Type:" may come first). A bare BEGIN line in prose is not a key.
    _rule(
        "private-key",
        "Private key",
        ("PRIVATE KEY",),
        rf"-----BEGIN[ A-Z0-9_-]{{0,100}}PRIVATE KEY(?: BLOCK)?-----{_PEM_GAP}"
        rf"(?:[A-Za-z][A-Za-z-]*:[^\n\\]{{0,200}}{_PEM_GAP}){{0,4}}[A-Za-z0-9+/=]{{32,}}",
        min_entropy=0.0,  # the base64 body after the BEGIN line is the evidence
    ),
    # Credentials in a URL's query string: webhook and callback URLs, pre-signed links,
    # `?access_token=…`, `&key=…`, `&sig=…`. Only the value is the secret (and redacted); it
    # must look random (length, entropy, mixed classes) and not be a placeholder.
    _rule(
        "url-query-credential",
        "Credential in a URL query string",
        ("token=", "key=", "Key=", "KEY=", "secret=", "password=", "pwd=", "sig=", "ignature="),
        r"[?&](?i:[a-z0-9_.-]{0,40}?(?:token|key|secret|password|passwd|pwd|sig|signature"
        r"|auth))=(?P<value>[A-Za-z0-9_.~%+/=-]{12,})",
        mixed=True,
        check=_not_a_placeholder,
        group="value",
    ),
    # A quoted password value that begins with a symbol (`password = "%Tq8!…"`): detect-secrets'
    # keyword rule takes such values for templates and skips them. Placeholders (`${…}`, `%(…)s`,
    # `$NAME`) are not secrets; a real one mixes at least three character classes.
    _rule(
        "quoted-password",
        "Password in quotes",
        ("password", "Password", "PASSWORD", "passwd", "Passwd", "PASSWD", "pwd", "PWD"),
        r"(?i:password|passwd|pwd)[\"']?[ \t]{0,20}(?::=|=>|[:=])[ \t]{0,20}(?P<q>[\"'])"
        r"(?P<value>[!#$%&()*+,./:;<=>?@\[\]^_`{|}~-][^\s\"'\\]{7,127})(?P=q)",
        min_entropy=2.5,
        check=_quoted_password,
        group="value",
    ),
    # A password or token given as an option: `--password …`, `--token=…`, `--api-key …`, and
    # `-p` after a user (`docker login -u deploy -p …`, `mysql -u root -p…`; alone, `-p` is a
    # port or `mkdir -p`) (memhub).
    _value_rule(
        "command-line-password",
        "Password on a command line",
        (
            "-u",
            "--user",
            "--pass",
            "--token",
            "--api",
            "--secret",
            "--client-secret",
            "--auth-token",
            "--access-token",
        ),  # fmt: skip
        r"(?:(?<![\w-])(?:-u|--user(?:name)?)(?:[ \t]*=?[ \t]*)[^\s-]\S*(?:[ \t]+\S+){0,6}?"
        r"[ \t]+-p(?:[ \t]+|=)?"
        r"|(?<![\w-])--(?:password|passwd|pass|token|auth-token|access-token|api-key|apikey"
        r"|secret|client-secret)(?:[ \t]+|=))"
        rf"(?P<q>[\"']?){_VALUE}(?P=q){_VALUE_END}",
        anchored=True,
    ),
    # A secret-named key given a value: `export DB_PASSWORD=…`, `AWS_SECRET_ACCESS_KEY=…` in a
    # Bash call, `password: …` in YAML or a Markdown line, `api_key = …` in INI, `"token": "…"`,
    # `| DB_PASSWORD | … |` in a Markdown table (memhub). Only the value counts, and only one
    # that is neither code, nor a path, nor a placeholder (see `_assigned_secret`).
    _value_rule(
        "secret-assignment",
        "Secret assigned to a secret-named key",
        ("secret", "passw", "passp", "pwd", "token", "api", "access", "private", "auth"),
        rf"{_SECRET_NAME}[\"'`*]{{0,2}}[ \t]{{0,20}}(?::=|=>|=|:|\|)\*{{0,2}}[ \t]{{0,20}}"
        rf"(?P<q>[\"'`]?){_VALUE}(?P=q){_VALUE_END}",
        anchored=True,
    ),
    # `curl -u user:password`, `--user user:password` (memhub): the part after the colon.
    _rule(
        "command-line-user-password",
        "User and password on a command line",
        ("-u", "--user"),
        r"(?<![\w-])(?:-u|--user)(?:[ \t]+|=)(?P<q>[\"']?)[^\s:\"'$-][^\s:\"']{0,64}:"
        rf"(?P<value>[^\s\"'`()\[\]{{}}<>,;@]{{6,256}}+)(?P=q){_VALUE_END}",
        min_entropy=2.0,
        check=_user_password,
        group="value",
        generic=True,
    ),
    # An HTTP Authorization header's credentials, as curl, code and notes write them:
    # `-H 'Authorization: Bearer …'`, `{"Authorization": "Basic …"}`, `Authorization: Token …`
    # (memhub). Bearer tokens are often opaque (no provider's prefix), and Basic's is the
    # base64 of `user:password`. `Bearer $TOKEN`, `Bearer ${{ … }}` and `<token>` are not values.
    _value_rule(
        "authorization-header",
        "Credentials in an Authorization header",
        ("authorization",),
        r"(?i:authorization)[\"']?[ \t]{0,20}(?::|=>?)[ \t]{0,20}[\"']?"
        r"(?i:bearer|basic|token|digest)[ \t]+(?P<value>[A-Za-z0-9._~+/=-]{8,2048}+)" + _VALUE_END,
        anchored=True,
    ),
    # A .netrc entry (curl, git, pip and ftp read `~/.netrc`): `machine … login … password …`,
    # on one line or several (memhub). Only the password is the secret.
    _value_rule(
        "netrc-password",
        "Password in a .netrc entry",
        ("login",),
        r"(?<![\w-])login[ \t]+\S{1,128}\s{1,40}password[ \t]+"
        rf"(?P<value>[^\s\"'`,;)\]}}]{{8,256}}+){_VALUE_END}",
    ),
    # A password in a URL's user part: `redis://:…@cache:6379`, `amqp://deploy:…@mq`,
    # `https://user:…@git.example.com` (memhub). detect-secrets' Basic Auth plugin needs a user
    # name before the colon, and the fast rules (all that memhub-agent runs) had none; only
    # the password is the secret, judged as secret-assignment's value is.
    _value_rule(
        "url-password",
        "Password in a URL",
        ("://",),
        r"://[^\s:/?#@\[\]\"'`<>]{0,64}:(?P<value>[^\s/?#@\[\]\"'`<>]{8,256}+)@",
    ),
)

RULES: dict[str, str] = {rule.id: rule.label for rule in _RULES}  # one id may have two forms


def _entropy(token: str) -> float:
    n = len(token)
    return -sum(count / n * math.log2(count / n) for count in Counter(token).values())


def _mixes_classes(token: str) -> bool:
    lower = any(c.islower() for c in token)
    upper = any(c.isupper() for c in token)
    digit = any(c.isdigit() for c in token)
    return lower + upper + digit >= 2


def _accepts(rule: _Rule, token: str) -> bool:
    if rule.min_entropy and _entropy(token) < rule.min_entropy:
        return False
    if rule.mixed and not _mixes_classes(token):
        return False
    return rule.check is None or rule.check(token)


def _matches(text: str) -> list[tuple[int, int, _Rule]]:
    """(start, end, rule) of every accepted secret in ``text``: the secret's own span, also
    where characters that render as nothing or as ASCII (a zero-width space, a soft hyphen,
    full-width letters, a no-break space) hide it from the rules (:func:`_unhidden`)."""
    found = _plain_matches(text)
    if _HIDING.search(text) is None:
        return found
    folded, where = _unhidden(text)
    for start, end, rule in _plain_matches(folded):
        start, end = where(start), where(end - 1) + 1
        if not any(s < end and start < e for s, e, _ in found):
            found.append((start, end, rule))
    return found


# Characters that render as nothing, and those that read as an ASCII one: copied from a chat
# or a web page, or typed to slip past a filter, they keep a token or `password:` from a rule.
_INVISIBLE = re.compile("[\u00ad\u180e\u200b\u200c\u200d\u2060\ufeff]")
_LOOK_ALIKE = re.compile("[\u00a0\u2007\u202f\uff01-\uff5e]")
_HIDING = re.compile(f"{_INVISIBLE.pattern}|{_LOOK_ALIKE.pattern}")


def _as_ascii(match: re.Match[str]) -> str:
    char = match[0]
    return " " if char < "\uff01" else chr(ord(char) - 0xFEE0)


def _unhidden(text: str) -> tuple[str, Callable[[int], int]]:
    """``text`` without its invisible characters and with look-alikes as ASCII, and where each
    of its characters stands in ``text`` (so a secret found in it is redacted in ``text``).
    Regexes, not a walk of every character: a long transcript holding one no-break space (or
    any CJK text, with its full-width punctuation) is scanned twice, not many times over."""
    # Where each removed character would stand in the folded text: a folded offset is moved
    # on by the number removed at or before it.
    removed = [match.start() - n for n, match in enumerate(_INVISIBLE.finditer(text))]
    folded = _LOOK_ALIKE.sub(_as_ascii, _INVISIBLE.sub("", text) if removed else text)
    return folded, lambda offset: offset + bisect_right(removed, offset)


def _plain_matches(text: str) -> list[tuple[int, int, _Rule]]:
    if len(text) < _SHORTEST:
        return []  # a transcript entry is mostly ids, timestamps and names
    found = []
    lowered = None
    for rule in _RULES:
        if rule.anchored:
            if lowered is None:
                lowered = text.lower()
                if len(lowered) != len(text):  # a letter such as İ lowers to two characters
                    lowered = text.translate(_ASCII_LOWER)
            matches = _anchored_matches(rule, text, lowered)
        else:
            for keyword in rule.keywords:  # a loop, not any(): this runs 40 times a file
                if keyword in text:
                    break
            else:
                continue
            matches = rule.pattern.finditer(text)
        for match in matches:
            if _accepts(rule, match.group(rule.group)):
                found.append((match.start(rule.group), match.end(rule.group), rule))
    if not any(rule.generic for _, _, rule in found):
        return found
    # A value two rules match is reported (and labelled) once: by its provider's rule when it
    # has one (a GitHub token given to GITHUB_TOKEN), else by the first generic rule.
    kept: list[tuple[int, int, _Rule]] = []
    for start, end, rule in sorted(found, key=lambda m: m[2].generic):
        if not rule.generic or not any(s < end and start < e for s, e, _ in kept):
            kept.append((start, end, rule))
    return kept


# No rule matches fewer characters (`pwd=` and eight, `-u a:` and six, `AKIA` and sixteen).
_SHORTEST = 10
# Keeps offsets. Spelt out: the `string` module is a millisecond of the Stop hook's start.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _anchored_matches(rule: _Rule, text: str, lowered: str) -> Iterator[re.Match[str]]:
    # A case-insensitive alternation tried at every position is the slowest regex there is;
    # finding its words first (str.find, in C) and matching there is many times faster.
    starts: set[int] = set()
    for word in rule.keywords:
        position = lowered.find(word)
        while position != -1:
            starts.add(position)
            position = lowered.find(word, position + 1)
    end = 0
    for position in sorted(starts):
        if position < end:
            continue  # inside the last match, as finditer would skip it
        match = rule.pattern.match(text, position)
        if match:
            end = match.end()
            yield match


def scan_text(text: str) -> list[SecretHit]:
    """Every fast-rule hit in ``text``, ordered by line then rule; one hit per rule and line.

    Line numbers count ``\\n`` only (as editors do), from 1; a match spanning lines (a private
    key) is reported on its first line.
    """
    found = {(text.count("\n", 0, start) + 1, rule.id) for start, _, rule in _matches(text)}
    return [SecretHit(rule_id, RULES[rule_id], line) for line, rule_id in sorted(found)]


@functools.lru_cache(maxsize=4096)
def scan_name(key: str) -> tuple[SecretHit, ...]:
    """Every fast-rule hit in a file's name (its store key), on line 0: a token in a name is
    shared as surely as one in the text, in a teammate's checkout and in git's history and
    commit messages. Only the fast rules: their token shapes are certain enough for a name,
    where detect-secrets' entropy would take a hash in a name for a secret."""
    return tuple(SecretHit(hit.rule_id, hit.label, 0) for hit in scan_text(key))


def redact_text(text: str) -> tuple[str, list[SecretHit]]:
    """``text`` with every secret the fast rules find replaced by ``[REDACTED:<label>]``, and
    the hits (as :func:`scan_text` reports them, lines counted in the original text).

    For transcripts, which carry credentials a memory never should (environment dumps, webhook
    URLs): the conversation stays readable, the values are gone. Overlapping matches are
    redacted once, under the first rule's label. Redaction repeats until the rules find
    nothing, so no value a rule matches is left, whatever the one before it was.
    """
    hits: set[tuple[int, str]] = set()
    for _ in range(_MAX_PASSES):
        matches = _matches(text)
        if not matches:
            break
        hits |= {(text.count("\n", 0, start) + 1, rule.id) for start, _, rule in matches}
        text = _replaced(text, matches)
    return text, [SecretHit(rule_id, RULES[rule_id], line) for line, rule_id in sorted(hits)]


# A redaction label holds no value a rule matches, so a second pass finds nothing; the bound
# keeps a pathological text from looping.
_MAX_PASSES = 4


def _replaced(text: str, matches: list[tuple[int, int, _Rule]]) -> str:
    parts, position = [], 0
    for start, end, rule in sorted(matches, key=lambda m: (m[0], -m[1])):
        if start < position:
            continue  # inside a span already redacted
        parts += [text[position:start], redaction(rule.label)]
        position = end
    parts.append(text[position:])
    return "".join(parts)


class SecretScanCache:
    """Scan results remembered by the SHA-256 of the text, so unchanged content is scanned once.

    ``scanner`` defaults to :func:`scan_text`; the push gate passes its own. Only digests and
    hits are kept, never the text. Thread-safe; the least recently used entry goes first once
    ``maxsize`` is reached. Two threads meeting the same new text may both scan it (harmless:
    scanners are pure).
    """

    def __init__(
        self,
        scanner: Callable[[str], Sequence[SecretHit]] = scan_text,
        *,
        maxsize: int = 10_000,
    ) -> None:
        self._scanner = scanner
        self._maxsize = maxsize
        self._entries: OrderedDict[bytes, tuple[SecretHit, ...]] = OrderedDict()
        self._lock = allocate_lock()

    @staticmethod
    def digest(text: str) -> bytes:
        # surrogatepass: a stray surrogate must not make the scan (and so the save) crash.
        return sha256(text.encode("utf-8", "surrogatepass")).digest()

    def scan(self, text: str) -> list[SecretHit]:
        key = self.digest(text)
        with self._lock:
            hits = self._entries.get(key)
            if hits is not None:
                self._entries.move_to_end(key)
                return list(hits)
        hits = tuple(self._scanner(text))
        with self._lock:
            self._entries[key] = hits
            self._entries.move_to_end(key)
            while len(self._entries) > self._maxsize:
                self._entries.popitem(last=False)
        return list(hits)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
