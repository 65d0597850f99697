# A PostgreSQL server of a script's own, for the tests and benchmarks that
# need one: initdb and pg_ctl under $TMP/pg, reached on a unix socket there
# only (no TCP port), fsync on (as a real one). As root it runs as `nobody`
# (PostgreSQL refuses root). The caller sets TMP and calls stop_postgres on
# exit. start_postgres: 0 and PG (a libpq connection string for the database
# `shoal`) when it runs; 1 with the reason on stdout when PostgreSQL is not
# installed or cannot start.
PG_STARTED=0
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
PG_AS=""
[ "$(id -u)" = 0 ] && PG_AS="setpriv --reuid=nobody --regid=nogroup --clear-groups"
start_postgres() {
  if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/pg_ctl" ]; then
    echo "[program] PostgreSQL is not installed (apt-get install postgresql, or scripts/install-deps.sh)"
    return 1
  fi
  chmod 755 "$TMP"
  mkdir -p "$TMP/pg"
  [ -n "$PG_AS" ] && chown nobody:nogroup "$TMP/pg"
  if ! $PG_AS "$PGBIN/initdb" -D "$TMP/pg/data" -A trust -E UTF8 -U shoal --no-instructions \
      > "$TMP/pg/initdb.log" 2>&1 ||
     ! $PG_AS "$PGBIN/pg_ctl" -D "$TMP/pg/data" -l "$TMP/pg/log" -w -t 60 \
      -o "-k $TMP/pg -c listen_addresses=" start > /dev/null 2>&1; then
    echo "[machine] cannot start PostgreSQL: $(tail -3 "$TMP/pg/initdb.log" "$TMP/pg/log" 2>/dev/null)"
    return 1
  fi
  PG_STARTED=1
  $PG_AS "$PGBIN/createdb" -h "$TMP/pg" -U shoal shoal || { echo "createdb failed"; return 1; }
  PG="host=$TMP/pg user=shoal dbname=shoal"
}
stop_postgres() {
  [ "$PG_STARTED" = 1 ] && $PG_AS "$PGBIN/pg_ctl" -D "$TMP/pg/data" -m immediate -w stop > /dev/null 2>&1
  PG_STARTED=0
}
