# Shared by scripts/run and scripts/test: a virtual environment with memhub installed.
# Idempotent: the install step reruns only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "memhub: '$*' needs root; run it as root or install sudo." >&2; return 1; fi
}

apt_install() {
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@"
}

setup_venv() {
  local extra="${1:-}"
  local python="${PYTHON:-python3}"
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "memhub needs Python 3.11 or newer as '$python' (set PYTHON=/path/to/python3.11)." >&2
    exit 1
  fi
  if [ ! -x .venv/bin/python ]; then
    if ! "$python" -m venv .venv 2>/dev/null; then
      rm -rf .venv
      echo "memhub: installing python3-venv (Debian/Ubuntu) …" >&2
      apt_install python3-venv
      "$python" -m venv .venv
    fi
  fi
  local stamp=".venv/.memhub-installed${extra:+-$extra}"
  local want
  want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    step "installing dependencies into .venv" \
      sh -c '.venv/bin/python -m pip install --quiet --upgrade pip &&
             .venv/bin/python -m pip install --quiet -e ".$1"' _ "${extra:+[$extra]}"
    echo "$want" > "$stamp"
  fi
}

# Run a step in one line of output: "memhub: <what> … done", or its output when it fails.
step() {
  local what="$1"; shift
  local log
  log="$(mktemp)"
  printf 'memhub: %s … ' "$what" >&2
  if "$@" >"$log" 2>&1; then
    echo "done" >&2
    rm -f "$log"
  else
    local code=$?
    echo "failed:" >&2
    cat "$log" >&2
    rm -f "$log"
    exit "$code"
  fi
}

# Claude Code's CLI, for the end-to-end test of the hooks (tests/client/test_claude_code.py),
# when npm is here: the pinned version in .node/ of the checkout (git-ignored), installed again
# only when the pin changes. Without npm, or when the install fails, the test is skipped,
# saying why; the rest of the suite runs.
CLAUDE_CODE_VERSION=2.1.328
setup_claude_code() {
  if ! command -v npm >/dev/null; then
    echo "memhub: no npm: the test with the real Claude Code CLI will be skipped" >&2
    return 0
  fi
  local stamp=".node/.memhub-installed"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$CLAUDE_CODE_VERSION" ]; then
    return 0
  fi
  # One line, once done: scripts/test runs this beside the venv's install.
  mkdir -p .node
  if npm install --prefix .node --no-save --no-audit --no-fund --loglevel=error \
      "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >/dev/null 2>&1; then
    echo "$CLAUDE_CODE_VERSION" > "$stamp"
    echo "memhub: installed Claude Code $CLAUDE_CODE_VERSION into .node/ for its test" >&2
  else
    echo "memhub: installing Claude Code $CLAUDE_CODE_VERSION failed: its test will be skipped" >&2
  fi
}

# Gemini CLI and Codex CLI, for the end-to-end tests of their hooks (tests/client/test_gemini_cli.py,
# tests/client/test_codex.py), the same way: pinned, in .node-agents/ (git-ignored), skipped
# with a reason when npm is missing or the install fails.
GEMINI_CLI_VERSION=0.61.0
CODEX_VERSION=0.171.0
setup_other_agents() {
  if ! command -v npm >/dev/null; then
    echo "memhub: no npm: the tests with the real Gemini CLI and Codex CLI will be skipped" >&2
    return 0
  fi
  local stamp=".node-agents/.memhub-installed" want="$GEMINI_CLI_VERSION $CODEX_VERSION"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  mkdir -p .node-agents
  if npm install --prefix .node-agents --no-save --no-audit --no-fund --loglevel=error \
      "@google/gemini-cli@$GEMINI_CLI_VERSION" "@openai/codex@$CODEX_VERSION" >/dev/null 2>&1; then
    echo "$want" > "$stamp"
    echo "memhub: installed Gemini CLI $GEMINI_CLI_VERSION and Codex $CODEX_VERSION into .node-agents/" >&2
  else
    echo "memhub: installing Gemini CLI and Codex failed: their tests will be skipped" >&2
  fi
}
