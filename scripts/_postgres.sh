# Sourced by scripts/test: a throwaway PostgreSQL cluster in a temp dir (Debian's postgresql,
# which scripts/test installs with apt when missing), reachable only through a Unix socket in
# that dir. Sets DATABASE_URL for the run and removes the cluster when the shell exits.

# The bin dir of the newest PostgreSQL installed; fails when there is none.
postgres_bin() {
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null \
    && ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1
}

start_postgres() {
  local bin
  bin="$(postgres_bin)"
  PG_DIR="$(mktemp -d /tmp/memhub-pg.XXXXXX)"
  local run=()
  if [ "$(id -u)" = 0 ]; then  # initdb refuses to run as root
    chown postgres "$PG_DIR"
    run=(runuser -u postgres --)
  fi
  "${run[@]}" "$bin/initdb" -D "$PG_DIR/data" -U memhub --auth=trust -E UTF8 --locale=C.UTF-8 \
    --no-sync >/dev/null
  # Throwaway data: no fsync. No TCP: the socket lives in the temp dir.
  "${run[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w -s start \
    -o "-k $PG_DIR -c listen_addresses= -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
  trap 'stop_postgres' EXIT
  PG_CTL=("${run[@]}" "$bin/pg_ctl" -D "$PG_DIR/data")
  "$bin/createdb" -h "$PG_DIR" -U memhub memhub
  export DATABASE_URL="postgres://memhub@/memhub?host=$PG_DIR"
}

stop_postgres() {
  "${PG_CTL[@]}" -w -s -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
}
