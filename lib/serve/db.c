/* SPDX-License-Identifier: MIT */
/*
 * db.c - session history in SQLite (Debian's libsqlite3): sessions, their
 * params, status and artifacts. Kept across restarts; pruned by count and
 * age. Every statement is prepared with bound values (no SQL built from
 * request text). The caller serializes access (one connection, one mutex).
 */
#include "common/compat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "serve/internal.h"

static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"CREATE TABLE IF NOT EXISTS sessions("
	" id TEXT PRIMARY KEY, kind TEXT NOT NULL, pid INTEGER NOT NULL, process_name TEXT,"
	" status TEXT NOT NULL, created INTEGER NOT NULL, started INTEGER, ended INTEGER,"
	" duration_s REAL, exit_code INTEGER, err_code INTEGER, err_message TEXT,"
	" report TEXT, dir TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS params(session TEXT NOT NULL, key TEXT NOT NULL,"
	" value TEXT NOT NULL, is_string INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS artifacts(session TEXT NOT NULL, name TEXT NOT NULL,"
	" size INTEGER NOT NULL, PRIMARY KEY(session, name));";

int64_t srv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void srv_time_str(int64_t ms, char *buf, size_t len)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

int srv_db_open(const char *path, sqlite3 **db)
{
	char *msg = NULL;

	*db = NULL;
	if (srv_dl_load(NULL, 0))
		return -ENOENT;
	/* Created 0600, and one an older clrtap left 0644 made 0600: the history
	 * names processes and holds what sessions found. SQLite gives its -wal and
	 * -shm files the database file's mode. */
	if (strcmp(path, ":memory:")) {
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600), e = 0;
		struct stat st;

		if (fd < 0)
			return -errno;
		if (fstat(fd, &st))
			e = -errno;
		else if (!S_ISREG(st.st_mode))
			e = -EINVAL;
		else if ((st.st_mode & 0077) && fchmod(fd, 0600))
			e = -errno;
		close(fd);
		if (e)
			return e;
	}
	if (sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				      SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK) {
		sqlite3_close(*db);
		*db = NULL;
		return -EIO;
	}
	sqlite3_busy_timeout(*db, 2000);
	if (sqlite3_exec(*db, schema, NULL, NULL, &msg) != SQLITE_OK) {
		sqlite3_free(msg);
		sqlite3_close(*db);
		*db = NULL;
		return -EIO;
	}
	return 0;
}

void srv_db_close(sqlite3 *db)
{
	sqlite3_close(db);
}

static int run(sqlite3 *db, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *st;
	va_list ap;
	int i, rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	va_start(ap, fmt);
	for (i = 0; fmt[i]; i++) {
		switch (fmt[i]) {
		case 's': {
			const char *s = va_arg(ap, const char *);

			if (s)
				sqlite3_bind_text(st, i + 1, s, -1, SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(st, i + 1);
			break;
		}
		case 'i':
			sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
			break;
		case 'd':
			sqlite3_bind_double(st, i + 1, va_arg(ap, double));
			break;
		}
	}
	va_end(ap);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

int srv_db_insert(sqlite3 *db, const char *id, const struct serve_session_req *req,
		  const char *process_name, const char *dir, double duration_s, int64_t created_ms)
{
	size_t i;
	int err;

	err = run(db, "INSERT INTO sessions(id,kind,pid,process_name,status,created,duration_s,dir)"
		      " VALUES(?,?,?,?,'queued',?,?,?)",
		  "ssisids", id, req->kind, (int64_t)req->pid, process_name, created_ms, duration_s,
		  dir);
	for (i = 0; !err && i < req->nparams; i++)
		err = run(db, "INSERT INTO params(session,key,value,is_string) VALUES(?,?,?,?)", "sssi",
			  id, req->params[i].key, req->params[i].value,
			  (int64_t)req->params[i].is_string);
	return err;
}

int srv_db_set_running(sqlite3 *db, const char *id, int64_t started_ms)
{
	return run(db, "UPDATE sessions SET status='running', started=? WHERE id=?", "is", started_ms,
		   id);
}

int srv_db_set_end(sqlite3 *db, const char *id, const struct srv_db_end *e, int64_t ended_ms)
{
	if (e->err_code >= 0)
		return run(db, "UPDATE sessions SET status=?, ended=?, exit_code=?, err_code=?,"
			       " err_message=? WHERE id=?",
			   "siiiss", e->status, ended_ms, (int64_t)e->exit_code, (int64_t)e->err_code,
			   e->err_message ? e->err_message : "", id);
	return run(db, "UPDATE sessions SET status=?, ended=?, exit_code=? WHERE id=?", "siis",
		   e->status, ended_ms, (int64_t)e->exit_code, id);
}

int srv_db_add_artifact(sqlite3 *db, const char *id, const char *name, uint64_t size,
			bool is_report)
{
	int err = run(db, "INSERT OR REPLACE INTO artifacts(session,name,size) VALUES(?,?,?)", "ssi",
		      id, name, (int64_t)size);

	if (!err && is_report)
		err = run(db, "UPDATE sessions SET report=? WHERE id=?", "ss", name, id);
	return err;
}

static const char *col_text(sqlite3_stmt *st, int c)
{
	const unsigned char *t = sqlite3_column_text(st, c);

	return t ? (const char *)t : "";
}

static void session_obj(sqlite3 *db, sqlite3_stmt *st, struct ct_json *j)
{
	sqlite3_stmt *ps;
	const char *id = col_text(st, 0), *status = col_text(st, 4);
	char tbuf[40];
	int64_t created = sqlite3_column_int64(st, 5), now = srv_now_ms();
	int64_t started = sqlite3_column_int64(st, 6), ended = sqlite3_column_int64(st, 7);
	bool has_started = sqlite3_column_type(st, 6) != SQLITE_NULL;
	bool has_ended = sqlite3_column_type(st, 7) != SQLITE_NULL;
	double elapsed = 0;

	ct_json_obj_begin(j);
	ct_json_kv_str(j, "id", id);
	ct_json_kv_str(j, "kind", col_text(st, 1));
	ct_json_kv_i64(j, "pid", sqlite3_column_int64(st, 2));
	ct_json_kv_str(j, "process_name", col_text(st, 3));
	ct_json_kv_obj_begin(j, "params");
	if (sqlite3_prepare_v2(db, "SELECT key,value,is_string FROM params WHERE session=? ORDER BY rowid",
			       -1, &ps, NULL) == SQLITE_OK) {
		sqlite3_bind_text(ps, 1, id, -1, SQLITE_TRANSIENT);
		while (sqlite3_step(ps) == SQLITE_ROW) {
			const char *v = col_text(ps, 1);

			ct_json_key(j, col_text(ps, 0));
			if (sqlite3_column_int(ps, 2))
				ct_json_str(j, v);
			else if (!strcmp(v, "true") || !strcmp(v, "false"))
				ct_json_bool(j, !strcmp(v, "true"));
			else
				ct_json_double(j, strtod(v, NULL));
		}
		sqlite3_finalize(ps);
	}
	ct_json_obj_end(j);
	ct_json_kv_str(j, "status", status);
	ct_json_kv_obj_begin(j, "progress");
	if (has_started)
		elapsed = (double)((has_ended ? ended : now) - started) / 1000.0;
	ct_json_kv_double(j, "elapsed_s", elapsed < 0 ? 0 : elapsed);
	ct_json_kv_double(j, "duration_s", sqlite3_column_double(st, 8));
	ct_json_obj_end(j);
	srv_time_str(created, tbuf, sizeof(tbuf));
	ct_json_kv_str(j, "created", tbuf);
	if (has_ended) {
		srv_time_str(ended, tbuf, sizeof(tbuf));
		ct_json_kv_str(j, "ended", tbuf);
	} else {
		ct_json_kv_null(j, "ended");
	}
	if (sqlite3_column_type(st, 9) != SQLITE_NULL)
		ct_json_kv_i64(j, "exit_code", sqlite3_column_int64(st, 9));
	else
		ct_json_kv_null(j, "exit_code");
	if (sqlite3_column_type(st, 10) != SQLITE_NULL) {
		int code = sqlite3_column_int(st, 10);

		ct_json_kv_obj_begin(j, "error");
		ct_json_kv_i64(j, "code", code);
		ct_json_kv_str(j, "name", ct_exit_name(code));
		ct_json_kv_str(j, "message", col_text(st, 11));
		ct_json_obj_end(j);
	} else {
		ct_json_kv_null(j, "error");
	}
	ct_json_kv_arr_begin(j, "artifacts");
	if (sqlite3_prepare_v2(db, "SELECT name,size FROM artifacts WHERE session=? ORDER BY name", -1,
			       &ps, NULL) == SQLITE_OK) {
		sqlite3_bind_text(ps, 1, id, -1, SQLITE_TRANSIENT);
		while (sqlite3_step(ps) == SQLITE_ROW) {
			ct_json_obj_begin(j);
			ct_json_kv_str(j, "name", col_text(ps, 0));
			ct_json_kv_i64(j, "size", sqlite3_column_int64(ps, 1));
			ct_json_kv_str(j, "content_type", serve_content_type(col_text(ps, 0)));
			ct_json_obj_end(j);
		}
		sqlite3_finalize(ps);
	}
	ct_json_arr_end(j);
	if (sqlite3_column_type(st, 12) != SQLITE_NULL)
		ct_json_kv_str(j, "report", col_text(st, 12));
	else
		ct_json_kv_null(j, "report");
	ct_json_obj_end(j);
}

#define SESSION_COLS \
	"id,kind,pid,process_name,status,created,started,ended,duration_s,exit_code,err_code," \
	"err_message,report,dir"

int srv_db_session_json(sqlite3 *db, const char *id, struct ct_json *j)
{
	sqlite3_stmt *st;
	int err = -ENOENT;

	if (sqlite3_prepare_v2(db, "SELECT " SESSION_COLS " FROM sessions WHERE id=?", -1, &st,
			       NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW) {
		session_obj(db, st, j);
		err = 0;
	}
	sqlite3_finalize(st);
	return err;
}

int srv_db_list_json(sqlite3 *db, struct ct_json *j)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db, "SELECT " SESSION_COLS " FROM sessions ORDER BY created DESC, rowid DESC",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	ct_json_obj_begin(j);
	ct_json_kv_arr_begin(j, "sessions");
	while (sqlite3_step(st) == SQLITE_ROW)
		session_obj(db, st, j);
	ct_json_arr_end(j);
	ct_json_obj_end(j);
	sqlite3_finalize(st);
	return 0;
}

int srv_db_artifact_dir(sqlite3 *db, const char *id, const char *name, char *dir, size_t dirlen)
{
	sqlite3_stmt *st;
	int err = -ENOENT;

	if (sqlite3_prepare_v2(db, "SELECT s.dir FROM artifacts a JOIN sessions s ON s.id=a.session"
				   " WHERE a.session=? AND a.name=?",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(dir, dirlen, "%s", col_text(st, 0));
		err = 0;
	}
	sqlite3_finalize(st);
	return err;
}

int srv_db_report(sqlite3 *db, const char *id, char *name, size_t namelen, char *dir,
		  size_t dirlen, char *status, size_t statuslen)
{
	sqlite3_stmt *st;
	int err = -ESRCH;

	if (sqlite3_prepare_v2(db, "SELECT report,dir,status FROM sessions WHERE id=?", -1, &st,
			       NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(status, statuslen, "%s", col_text(st, 2));
		if (sqlite3_column_type(st, 0) == SQLITE_NULL) {
			err = -ENOENT;
		} else {
			snprintf(name, namelen, "%s", col_text(st, 0));
			snprintf(dir, dirlen, "%s", col_text(st, 1));
			err = 0;
		}
	}
	sqlite3_finalize(st);
	return err;
}

int srv_db_status(sqlite3 *db, const char *id, char *status, size_t len)
{
	sqlite3_stmt *st;
	int err = -ENOENT;

	*status = 0;
	if (sqlite3_prepare_v2(db, "SELECT status FROM sessions WHERE id=?", -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(status, len, "%s", col_text(st, 0));
		err = 0;
	}
	sqlite3_finalize(st);
	return err;
}

int srv_db_recover(sqlite3 *db)
{
	return run(db, "UPDATE sessions SET status='failed', ended=?, exit_code=130, err_code=130,"
		       " err_message='the server stopped during the session'"
		       " WHERE status IN ('queued','running')",
		   "i", srv_now_ms());
}

int srv_db_prune(sqlite3 *db, unsigned max, unsigned max_age_days,
		 void (*fn)(const char *dir, void *ctx), void *ctx)
{
	sqlite3_stmt *st;
	int64_t cutoff = srv_now_ms() - (int64_t)max_age_days * 86400 * 1000;
	struct strbuf ids = STRBUF_INIT;
	const char *p;

	if (sqlite3_prepare_v2(db, "SELECT id,dir FROM sessions WHERE status NOT IN ('queued','running')"
				   " AND (created < ? OR id NOT IN (SELECT id FROM sessions"
				   " ORDER BY created DESC LIMIT ?))",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, cutoff);
	sqlite3_bind_int64(st, 2, max);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (fn)
			fn(col_text(st, 1), ctx);
		if (strbuf_addstr(&ids, col_text(st, 0)) || strbuf_addch(&ids, '\n'))
			break;
	}
	sqlite3_finalize(st);
	for (p = ids.buf; *p;) {
		const char *nl = strchr(p, '\n');
		char id[64];

		snprintf(id, sizeof(id), "%.*s", (int)(nl - p), p);
		run(db, "DELETE FROM artifacts WHERE session=?", "s", id);
		run(db, "DELETE FROM params WHERE session=?", "s", id);
		run(db, "DELETE FROM sessions WHERE id=?", "s", id);
		p = nl + 1;
	}
	strbuf_release(&ids);
	return 0;
}
