// The PostgreSQL results store (docs/store.md "A team's store"), through libpq.
//
// Schema version 1, the same tables as the SQLite store, plus the version in a table of its own
// (PostgreSQL has no user_version):
//   kstacklab_store(schema_version)  one row
//   runs(id bigint identity, stored_at, created, label, tool_version, kernel_release, host,
//        partial, document)
//   benchmarks(run_id -> runs.id, position, name, variant, params, repetitions)
// The tables live in the first schema of the connection's search_path (public unless the URL
// says `?options=-csearch_path%3DNAME`).
//
// Guarantees: a run is one transaction (READ COMMITTED; ids from an identity column, never
// reused), so readers, which read in one REPEATABLE READ snapshot, see whole runs or nothing;
// concurrent writers from any number of hosts never wait on one another (row locks only), except
// that the duplicate check of `results copy` and its insert run under an advisory lock, one copy
// batch at a time. The tables are created under a session advisory lock taken before the
// transaction that checks for them, so concurrent first writers do not race. An insert that meets
// a lost connection, a serialization failure or a deadlock is tried again, up to
// kInsertAttempts times in all. A read-only open sets the session READ ONLY: the server itself
// refuses any write.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kstacklab/common/text.h"
#include "store_backend.h"

namespace kstacklab::store::store_internal::pg {
namespace {

struct ConnCloser {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct ResultClearer {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Conn = std::unique_ptr<PGconn, ConnCloser>;
using Result = std::unique_ptr<PGresult, ResultClearer>;

// Keys of the advisory locks (per database, whatever the schema): the table creation's ("kstk"
// in ASCII) and the duplicate check's of `results copy` ("kstc").
constexpr int64_t kCreateLockKey = 0x6b73746b;
constexpr int64_t kCopyLockKey = 0x6b737463;

constexpr const char* kCreateSchema = R"sql(
CREATE TABLE runs(
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  stored_at text NOT NULL,
  created text NOT NULL,
  label text NOT NULL,
  tool_version text NOT NULL,
  kernel_release text,
  host text,
  partial integer NOT NULL,
  document text NOT NULL
);
CREATE TABLE benchmarks(
  run_id bigint NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  position integer NOT NULL,
  name text NOT NULL,
  variant text NOT NULL,
  params text NOT NULL,
  repetitions integer NOT NULL,
  PRIMARY KEY(run_id, position)
);
CREATE INDEX benchmarks_by_name ON benchmarks(name);
CREATE INDEX runs_by_created_label ON runs(created, label);
CREATE TABLE kstacklab_store(schema_version integer NOT NULL);
INSERT INTO kstacklab_store VALUES (1);
)sql";

// libpq's messages span lines ("...failed: Connection refused\n\tIs the server running...");
// an error here is one line.
std::string OneLine(const std::string& s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == '\n' || c == '\t' || c == '\r' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return EscapeControl(out);
}

// The remedy for what the server said, by SQLSTATE; "" when there is none to give.
std::string Remedy(const std::string& state) {
  if (state == "42501") {
    return "the role lacks a privilege here: ask the database owner to GRANT it (CREATE on the "
           "schema for the first write, then SELECT and INSERT on runs and benchmarks and USAGE "
           "on the runs id sequence), or let the owner create the store with one write";
  }
  if (state == "55P03") return "another session held a lock on the store for over 10 s";
  if (state == "42P01" || state == "42703") {
    return "the store's tables are not those of kstacklab's store schema: use another database "
           "or schema";
  }
  if (state == "53100") return "the database server's disk is full: free space on it";
  if (state == "2200H") {
    return "its run ids have reached the largest the id sequence allows, so no run can be added; "
           "start another store and keep this one for reading";
  }
  return "";
}

// Why the last command on `conn` (with result `res`, may be null) failed: the server's words,
// the remedy, and a lost connection said as such.
std::string Reason(PGconn* conn, const PGresult* res) {
  if (PQstatus(conn) == CONNECTION_BAD) {
    return fmt::format("the connection to the server was lost ({})", OneLine(PQerrorMessage(conn)));
  }
  std::string why;
  std::string state;
  if (res != nullptr) {
    const char* primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    const char* code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (primary != nullptr) why = primary;
    if (code != nullptr) state = code;
  }
  if (why.empty()) why = PQerrorMessage(conn);
  why = OneLine(why);
  if (std::string fix = Remedy(state); !fix.empty()) why += "; " + fix;
  return why;
}

// The parameters whose values libpq's parser accepts as any text and only its connect checks
// (libpq 15, fe-connect.c connectOptions2 and parse_int_param): a bad one would otherwise show
// as a failed connection. `values` lists the allowed words; empty means a whole number.
struct ParamRule {
  const char* keyword;
  std::vector<const char*> values;
};
const std::vector<ParamRule>& ParamRules() {
  static const std::vector<ParamRule> kRules = {
      {"sslmode", {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}},
      {"gssencmode", {"disable", "prefer", "require"}},
      {"channel_binding", {"disable", "prefer", "require"}},
      {"target_session_attrs",
       {"any", "read-write", "read-only", "primary", "standby", "prefer-standby"}},
      {"ssl_min_protocol_version", {"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"}},
      {"ssl_max_protocol_version", {"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"}},
      {"connect_timeout", {}},
      {"keepalives", {}},
      {"keepalives_idle", {}},
      {"keepalives_interval", {}},
      {"keepalives_count", {}},
      {"tcp_user_timeout", {}},
  };
  return kRules;
}

bool IsWholeNumber(const std::string& s) {
  return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
}

// A port is a number 1..65535; a URL with several hosts gives a comma-separated list (an empty
// entry: the default port).
bool IsPortList(const std::string& s) {
  size_t start = 0;
  for (;;) {
    const size_t comma = s.find(',', start);
    const std::string one = s.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!one.empty() && (!IsWholeNumber(one) || std::stol(one) < 1 || std::stol(one) > 65535)) {
      return false;
    }
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

// The one-line error for `keyword`=`value` when libpq would refuse it at connect time, else
// nothing.
std::optional<Error> CheckParam(const std::string& keyword, const std::string& value) {
  if (keyword == "port" && !IsPortList(value)) {
    return UsageError(fmt::format(
        "the results store URL's port is \"{}\": use a number from 1 to 65535 (a list, one per "
        "host, for several hosts)",
        EscapeControl(value)));
  }
  for (const ParamRule& rule : ParamRules()) {
    if (keyword != rule.keyword) continue;
    if (rule.values.empty()) {
      if (IsWholeNumber(value)) return std::nullopt;
      return UsageError(fmt::format(
          "the results store URL's {} is \"{}\": use a whole number (0 or more{})", keyword,
          EscapeControl(value), keyword == "connect_timeout" ? " seconds; 0 waits forever" : ""));
    }
    for (const char* allowed : rule.values) {
      if (value == allowed) return std::nullopt;
    }
    return UsageError(fmt::format("the results store URL's {} is \"{}\": use one of {}", keyword,
                                  EscapeControl(value), fmt::join(rule.values, ", ")));
  }
  return std::nullopt;
}

// The connection parameters libpq reads from `url`, checked: it must parse, every value libpq
// only checks when connecting must be one it accepts, and it must not hold a password (a
// command line is visible to every user of the machine through ps).
Status CheckUrl(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (opts == nullptr) {
    std::string why = err ? OneLine(err) : std::string("out of memory");
    PQfreemem(err);
    return UsageError(
        fmt::format("the results store URL is not one libpq understands: {}; write it as "
                    "postgresql://[USER@]HOST[:PORT]/DATABASE[?PARAM=VALUE...]",
                    why));
  }
  std::string secret;
  std::optional<Error> bad;
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    const std::string key = o->keyword;
    if (o->val == nullptr) continue;
    if ((key == "password" || key == "sslpassword") && *o->val != '\0') secret = key;
    if (!bad) bad = CheckParam(key, o->val);
  }
  PQconninfoFree(opts);
  if (!secret.empty()) {
    return UsageError(fmt::format(
        "the results store URL holds a {}: leave it out and put it in ~/.pgpass (or the file "
        "PGPASSFILE names, or a service in PGSERVICEFILE); a command line is visible to every "
        "user of the machine",
        secret));
  }
  if (bad) return *bad;
  return OkStatus();
}

// The connection, or why not. A wrong database, role or password is the user's to fix (usage);
// a server that does not answer is a runtime failure.
Expected<Conn> Connect(const std::string& url) {
  // Later parameters override earlier ones: the URL's own connect_timeout and application name
  // win over these defaults, and the client encoding is always UTF-8 (documents are UTF-8).
  const char* keys[] = {"connect_timeout", "fallback_application_name", "dbname", "client_encoding",
                        nullptr};
  const char* values[] = {"10", "kstacklab", url.c_str(), "UTF8", nullptr};
  Conn conn(PQconnectdbParams(keys, values, 1));
  if (!conn) return RuntimeError("cannot connect to the results store: out of memory");
  if (PQstatus(conn.get()) == CONNECTION_OK) return conn;
  const std::string why = OneLine(PQerrorMessage(conn.get()));
  const bool theirs = why.find("does not exist") != std::string::npos ||
                      why.find("password authentication failed") != std::string::npos ||
                      why.find("no password supplied") != std::string::npos ||
                      why.find("no pg_hba.conf entry") != std::string::npos;
  if (theirs) {
    return UsageError(fmt::format(
        "cannot connect to the results store {}: {}; check the URL's role and database, and the "
        "password in ~/.pgpass (or PGPASSFILE)",
        url, why));
  }
  return RuntimeError(fmt::format(
      "cannot connect to the results store {}: {}; is the server running and reachable at the "
      "URL's host and port?",
      url, why));
}

// The SQLSTATE of the last command that failed on this thread ("" when the server gave none),
// for the callers that act on the kind of failure. A handle is used by one thread at a time
// (store.h).
thread_local std::string t_failed_state;

// Runs `sql` with text parameters; an error when it did not end in `want`.
Expected<Result> Exec(PGconn* conn, const char* sql, const std::vector<const char*>& params,
                      ExecStatusType want) {
  Result res(PQexecParams(conn, sql, static_cast<int>(params.size()), nullptr, params.data(),
                          nullptr, nullptr, 0));
  if (!res || PQresultStatus(res.get()) != want) {
    const char* state = res ? PQresultErrorField(res.get(), PG_DIAG_SQLSTATE) : nullptr;
    t_failed_state = state != nullptr ? state : "";
    return RuntimeError(Reason(conn, res.get()));
  }
  return res;
}

Status Command(PGconn* conn, const char* sql) {
  auto r = Exec(conn, sql, {}, PGRES_COMMAND_OK);
  if (!r.ok()) return r.error();
  return OkStatus();
}

std::string Text(const PGresult* r, int row, int col) {
  if (PQgetisnull(r, row, col)) return std::string();
  return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
}

int64_t Int(const PGresult* r, int row, int col) {
  return std::strtoll(PQgetvalue(r, row, col), nullptr, 10);
}

// An open transaction, rolled back on scope exit unless committed.
class Transaction {
 public:
  static Expected<Transaction> Begin(PGconn* conn, const char* begin) {
    KSTACKLAB_RETURN_IF_ERROR(Command(conn, begin));
    return Transaction(conn);
  }
  Transaction(Transaction&& o) noexcept : conn_(std::exchange(o.conn_, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() {
    if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) Result(PQexec(conn_, "ROLLBACK"));
  }
  Status Commit() {
    PGconn* conn = std::exchange(conn_, nullptr);
    return Command(conn, "COMMIT");
  }

 private:
  explicit Transaction(PGconn* conn) : conn_(conn) {}
  PGconn* conn_;
};

// What the database holds: kstacklab's version, 0 for no kstacklab tables and no tables named
// like them; a foreign or damaged layout is an error.
Expected<int64_t> ReadVersion(PGconn* conn, const std::string& url) {
  auto present = Exec(conn,
                      "SELECT to_regclass('kstacklab_store') IS NOT NULL, "
                      "to_regclass('runs') IS NOT NULL OR to_regclass('benchmarks') IS NOT NULL",
                      {}, PGRES_TUPLES_OK);
  if (!present.ok()) {
    return RuntimeError(fmt::format("results store {}: cannot read the table list: {}", url,
                                    present.error().message));
  }
  const bool meta = Text(present->get(), 0, 0) == "t";
  const bool named_like = Text(present->get(), 0, 1) == "t";
  if (!meta) {
    if (!named_like) return int64_t{0};
    return UsageError(fmt::format(
        "{} has tables named runs or benchmarks but is not a kstacklab results store; use another "
        "database, or another schema (?options=-csearch_path%3DNAME in the URL)",
        url));
  }
  auto version = Exec(conn, "SELECT schema_version FROM kstacklab_store", {}, PGRES_TUPLES_OK);
  if (!version.ok()) {
    return RuntimeError(fmt::format("results store {}: cannot read the schema version: {}", url,
                                    version.error().message));
  }
  if (PQntuples(version->get()) != 1 || Int(version->get(), 0, 0) < 1) {
    return UsageError(fmt::format(
        "{}: table kstacklab_store does not hold one schema version of 1 or more: not a kstacklab "
        "results store (or one edited by hand); use another database or schema",
        url));
  }
  return Int(version->get(), 0, 0);
}

// The index the duplicate check of `results copy` looks runs up by. A store created before it
// was part of the schema gets it from the next write open of a role that owns the table; it
// changes nothing an older kstacklab reads or writes, so the schema version stays 1.
constexpr const char* kCopyIndex =
    "CREATE INDEX IF NOT EXISTS runs_by_created_label ON runs(created, label)";

// The session-level advisory lock on kCreateLockKey, held from Take() to scope exit (or until
// the connection ends). It is taken BEFORE the transaction that reads the table list: a session
// refreshes its catalog cache when a transaction starts, not when an advisory lock is granted,
// so a transaction that began before the wait would miss the tables the holder just created and
// fail with "relation runs already exists".
class CreateLock {
 public:
  explicit CreateLock(PGconn* conn) : conn_(conn) {}
  CreateLock(const CreateLock&) = delete;
  CreateLock& operator=(const CreateLock&) = delete;
  ~CreateLock() {
    if (held_ && PQstatus(conn_) == CONNECTION_OK) {
      const std::string key = std::to_string(kCreateLockKey);
      (void)Exec(conn_, "SELECT pg_advisory_unlock($1::bigint)", {key.c_str()}, PGRES_TUPLES_OK);
    }
  }
  Status Take() {
    const std::string key = std::to_string(kCreateLockKey);
    auto lock = Exec(conn_, "SELECT pg_advisory_lock($1::bigint)", {key.c_str()}, PGRES_TUPLES_OK);
    if (!lock.ok()) return lock.error();
    held_ = true;
    return OkStatus();
  }

 private:
  PGconn* conn_;
  bool held_ = false;
};

// Whether runs_by_created_label exists (in the first schema of the search path, as the tables).
Expected<bool> HasCopyIndex(PGconn* conn, const std::string& url) {
  auto has =
      Exec(conn, "SELECT to_regclass('runs_by_created_label') IS NOT NULL", {}, PGRES_TUPLES_OK);
  if (!has.ok()) {
    return RuntimeError(
        fmt::format("results store {}: cannot read the index list: {}", url, has.error().message));
  }
  return Text(has->get(), 0, 0) == "t";
}

// Creates the tables of an empty database, or adds kCopyIndex to an older store, under the
// creation lock and re-checking: another process may have done it. A role that does not own the
// tables cannot add the index; the store works without it (the duplicate check is slower).
Status CreateTables(PGconn* conn, const std::string& url) {
  CreateLock lock(conn);
  if (Status st = lock.Take(); !st.ok()) {
    return RuntimeError(
        fmt::format("results store {}: cannot lock the store to create its tables: {}", url,
                    st.error().message));
  }
  auto tx = Transaction::Begin(conn, "BEGIN");
  if (!tx.ok()) return RuntimeError(fmt::format("results store {}: {}", url, tx.error().message));
  auto version = ReadVersion(conn, url);
  if (!version.ok()) return version.error();
  if (*version > kStoreSchemaVersion) return TooNewSchema(url, *version);
  if (*version == 0) {
    Result res(PQexec(conn, kCreateSchema));
    if (!res || PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
      return RuntimeError(fmt::format("results store {}: cannot create the tables: {}", url,
                                      Reason(conn, res.get())));
    }
  } else {
    // Looked up first: IF NOT EXISTS on an index that exists sends a notice libpq would print.
    auto has = HasCopyIndex(conn, url);
    if (!has.ok()) return has.error();
    if (!*has) {
      auto index = Exec(conn, kCopyIndex, {}, PGRES_COMMAND_OK);
      if (!index.ok() && t_failed_state == "42501") return OkStatus();  // not the owner: as is
      if (!index.ok()) {
        return RuntimeError(
            fmt::format("results store {}: cannot add an index: {}", url, index.error().message));
      }
    }
  }
  if (Status st = tx->Commit(); !st.ok()) {
    return RuntimeError(
        fmt::format("results store {}: cannot commit the new tables: {}", url, st.error().message));
  }
  return OkStatus();
}

// The session settings every handle gets: locks waited for at most kBusyTimeoutMs, and for a
// reader a read-only session.
Status Configure(PGconn* conn, const std::string& url, ResultStore::Mode mode) {
  const std::string server_encoding =
      PQparameterStatus(conn, "server_encoding") ? PQparameterStatus(conn, "server_encoding") : "";
  if (server_encoding != "UTF8") {
    return UsageError(fmt::format(
        "results store {}: the database's encoding is {}, and result documents are UTF-8; "
        "create the database with ENCODING 'UTF8' (createdb -E UTF8 -T template0)",
        url, server_encoding.empty() ? "unknown" : server_encoding));
  }
  const std::string timeout = fmt::format("SET lock_timeout = {}", ResultStore::kBusyTimeoutMs);
  if (Status st = Command(conn, timeout.c_str()); !st.ok()) {
    return RuntimeError(fmt::format("results store {}: {}", url, st.error().message));
  }
  if (mode == ResultStore::Mode::kExisting) {
    if (Status st = Command(conn, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY");
        !st.ok()) {
      return RuntimeError(fmt::format("results store {}: {}", url, st.error().message));
    }
  }
  return OkStatus();
}

// How often an insert that meets a transient failure (Transient) is tried in all, and how long
// it waits before the next try: 50 ms doubled each time, plus as much again at random, so that
// writers that collided do not collide again (at most 0.7 s over the three waits).
constexpr int kInsertAttempts = 4;
std::chrono::milliseconds RetryDelay(int attempt) {
  static thread_local std::minstd_rand jitter(
      static_cast<unsigned>(::getpid()) ^
      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
  const int base = 50 << (attempt - 1);
  return std::chrono::milliseconds(base + static_cast<int>(jitter() % static_cast<unsigned>(base)));
}

class PostgresBackend final : public Backend {
 public:
  PostgresBackend(Conn conn, std::string url, bool empty, bool read_only)
      : conn_(std::move(conn)), url_(std::move(url)), empty_(empty), read_only_(read_only) {}

  Expected<std::vector<StoredRow>> InsertAll(const std::vector<RunRow>& rows,
                                             Duplicates duplicates) override;
  Expected<std::vector<StoredRunInfo>> List() override;
  Expected<StoredRunInfo> Info(int64_t id) override;
  Expected<std::string> Document(int64_t id) override;

 private:
  Error Fail(const std::string& what, const Error& why) const {
    return RuntimeError(fmt::format("results store {}: {}: {}", url_, what, why.message));
  }
  Expected<std::vector<std::string>> BenchmarkNames(int64_t id);

  Conn conn_;
  std::string url_;
  bool empty_;  // a read-only open of a database without kstacklab's tables
  bool read_only_;
};

constexpr const char* kInfoColumns =
    "SELECT id, created, stored_at, label, tool_version, kernel_release, host, partial FROM runs";

StoredRunInfo InfoFromRow(const PGresult* r, int row) {
  StoredRunInfo info;
  info.id = Int(r, row, 0);
  info.created = Text(r, row, 1);
  info.stored_at = Text(r, row, 2);
  info.label = Text(r, row, 3);
  info.tool_version = Text(r, row, 4);
  info.kernel_release = Text(r, row, 5);
  info.host = Text(r, row, 6);
  info.partial = Int(r, row, 7) != 0;
  return info;
}

// One run's rows inside the caller's transaction; its new id.
Expected<int64_t> InsertRow(PGconn* conn, const RunRow& row, const std::string& stored_at) {
  const char* null = nullptr;
  const std::string partial = row.partial ? "1" : "0";
  auto run =
      Exec(conn,
           "INSERT INTO runs(stored_at, created, label, tool_version, kernel_release, "
           "host, partial, document) VALUES($1,$2,$3,$4,$5,$6,$7,$8) RETURNING id",
           {stored_at.c_str(), row.created.c_str(), row.label.c_str(), row.tool_version.c_str(),
            row.kernel_release.empty() ? null : row.kernel_release.c_str(),
            row.host.empty() ? null : row.host.c_str(), partial.c_str(), row.document.c_str()},
           PGRES_TUPLES_OK);
  if (!run.ok())
    return Error{run.error().exit_code, "cannot insert the result: " + run.error().message};
  const int64_t id = Int(run->get(), 0, 0);
  const std::string id_text = std::to_string(id);
  for (size_t i = 0; i < row.benchmarks.size(); ++i) {
    const BenchmarkRow& b = row.benchmarks[i];
    const std::string position = std::to_string(i);
    const std::string reps = std::to_string(b.repetitions);
    auto bench = Exec(conn,
                      "INSERT INTO benchmarks(run_id, position, name, variant, params, "
                      "repetitions) VALUES($1,$2,$3,$4,$5,$6)",
                      {id_text.c_str(), position.c_str(), b.name.c_str(), b.variant.c_str(),
                       b.params.c_str(), reps.c_str()},
                      PGRES_COMMAND_OK);
    if (!bench.ok())
      return Error{bench.error().exit_code,
                   "cannot insert a benchmark row: " + bench.error().message};
  }
  return id;
}

// The id of the first run whose document is `row`'s byte for byte, 0 when there is none.
Expected<int64_t> FindDocument(PGconn* conn, const RunRow& row) {
  auto found =
      Exec(conn,
           "SELECT id FROM runs WHERE created = $1 AND label = $2 AND document = $3 "
           "ORDER BY id LIMIT 1",
           {row.created.c_str(), row.label.c_str(), row.document.c_str()}, PGRES_TUPLES_OK);
  if (!found.ok())
    return Error{found.error().exit_code, "cannot look for the result: " + found.error().message};
  return PQntuples(found->get()) == 0 ? int64_t{0} : Int(found->get(), 0, 0);
}

// One attempt at InsertAll: one transaction. `at_commit` says whether a failure came at COMMIT.
Expected<std::vector<StoredRow>> InsertAttempt(PGconn* conn, const std::vector<RunRow>& rows,
                                               Duplicates duplicates, bool& at_commit) {
  at_commit = false;
  auto tx = Transaction::Begin(conn, "BEGIN");
  if (!tx.ok()) return Error{kExitRuntime, "cannot start the insert: " + tx.error().message};
  if (duplicates == Duplicates::kSkip) {
    // Held to the end of the transaction: a concurrent kSkip insert checks after this one's rows
    // are committed (each statement of a READ COMMITTED transaction sees what was committed
    // before it started).
    const std::string key = std::to_string(kCopyLockKey);
    auto lock =
        Exec(conn, "SELECT pg_advisory_xact_lock($1::bigint)", {key.c_str()}, PGRES_TUPLES_OK);
    if (!lock.ok()) return Error{kExitRuntime, "cannot lock the store: " + lock.error().message};
  }
  const std::string stored_at = UtcTimestamp();
  std::vector<StoredRow> ids;
  for (const RunRow& row : rows) {
    if (duplicates == Duplicates::kSkip) {
      auto present = FindDocument(conn, row);
      if (!present.ok()) return present.error();
      if (*present != 0) {
        ids.push_back(StoredRow{*present, false});
        continue;
      }
    }
    auto id = InsertRow(conn, row, stored_at);
    if (!id.ok()) return id.error();
    ids.push_back(StoredRow{*id, true});
  }
  if (Status st = tx->Commit(); !st.ok()) {
    at_commit = true;
    return Error{kExitRuntime, "cannot commit the insert: " + st.error().message};
  }
  return ids;
}

// Whether the failure the last command on `conn` met may pass if the transaction is tried again:
// a lost connection, a serialization failure, a deadlock.
bool Transient(PGconn* conn) {
  return PQstatus(conn) == CONNECTION_BAD || t_failed_state == "40001" ||
         t_failed_state == "40P01" || t_failed_state.rfind("08", 0) == 0 ||
         t_failed_state == "57P01";
}

Expected<std::vector<StoredRow>> PostgresBackend::InsertAll(const std::vector<RunRow>& rows,
                                                            Duplicates duplicates) {
  if (read_only_) {
    return UsageError(fmt::format("results store {} was opened for reading only", url_));
  }
  for (int attempt = 1;; ++attempt) {
    bool at_commit = false;
    t_failed_state.clear();
    auto ids = InsertAttempt(conn_.get(), rows, duplicates, at_commit);
    if (ids.ok()) return ids;
    const bool lost = PQstatus(conn_.get()) == CONNECTION_BAD;
    if (!Transient(conn_.get()) || attempt == kInsertAttempts) {
      if (lost && at_commit) {
        // COMMIT was sent, its answer never came: the server may have committed.
        return RuntimeError(fmt::format(
            "results store {}: the connection was lost at commit, so whether the {} is stored "
            "cannot be told: `kstacklab results list` shows it if it is",
            url_, rows.size() == 1 ? "run" : "runs"));
      }
      return RuntimeError(
          fmt::format("results store {}: {}{}", url_, ids.error().message,
                      attempt > 1 ? fmt::format(" (tried {} times)", attempt) : std::string()));
    }
    std::this_thread::sleep_for(RetryDelay(attempt));
    if (lost) {
      PQreset(conn_.get());  // when the server is still away, the next attempt says so
      if (PQstatus(conn_.get()) == CONNECTION_OK) {
        KSTACKLAB_RETURN_IF_ERROR(Configure(conn_.get(), url_, ResultStore::Mode::kCreate));
      }
      // The lost transaction may have committed (a connection lost at COMMIT): the next attempt
      // skips a document already stored, so a run is never stored twice.
      duplicates = Duplicates::kSkip;
    }
  }
}

Expected<std::vector<StoredRunInfo>> PostgresBackend::List() {
  std::vector<StoredRunInfo> out;
  if (empty_) return out;
  auto tx = Transaction::Begin(conn_.get(), "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!tx.ok()) return Fail("cannot start reading", tx.error());
  auto runs =
      Exec(conn_.get(), (std::string(kInfoColumns) + " ORDER BY id").c_str(), {}, PGRES_TUPLES_OK);
  if (!runs.ok()) return Fail("cannot list the runs", runs.error());
  for (int i = 0; i < PQntuples(runs->get()); ++i) out.push_back(InfoFromRow(runs->get(), i));
  auto names = Exec(conn_.get(), "SELECT run_id, name FROM benchmarks ORDER BY run_id, position",
                    {}, PGRES_TUPLES_OK);
  if (!names.ok()) return Fail("cannot list the benchmarks", names.error());
  size_t k = 0;
  std::set<std::string> seen;
  for (int i = 0; i < PQntuples(names->get()); ++i) {
    const int64_t run_id = Int(names->get(), i, 0);
    while (k < out.size() && out[k].id < run_id) {
      ++k;
      seen.clear();
    }
    if (k < out.size() && out[k].id == run_id) {
      std::string name = Text(names->get(), i, 1);
      if (seen.insert(name).second) out[k].benchmarks.push_back(std::move(name));
    }
  }
  if (Status st = tx->Commit(); !st.ok()) return Fail("cannot end reading", st.error());
  return out;
}

Expected<std::vector<std::string>> PostgresBackend::BenchmarkNames(int64_t id) {
  const std::string id_text = std::to_string(id);
  auto names = Exec(conn_.get(), "SELECT name FROM benchmarks WHERE run_id = $1 ORDER BY position",
                    {id_text.c_str()}, PGRES_TUPLES_OK);
  if (!names.ok()) {
    return Fail(fmt::format("cannot read the benchmarks of id {}", id), names.error());
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (int i = 0; i < PQntuples(names->get()); ++i) {
    std::string name = Text(names->get(), i, 0);
    if (seen.insert(name).second) out.push_back(std::move(name));
  }
  return out;
}

Expected<StoredRunInfo> PostgresBackend::Info(int64_t id) {
  if (empty_) return NoSuchRun(id, url_);
  auto tx = Transaction::Begin(conn_.get(), "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!tx.ok()) return Fail("cannot start reading", tx.error());
  const std::string id_text = std::to_string(id);
  auto run = Exec(conn_.get(), (std::string(kInfoColumns) + " WHERE id = $1").c_str(),
                  {id_text.c_str()}, PGRES_TUPLES_OK);
  if (!run.ok()) return Fail(fmt::format("cannot read id {}", id), run.error());
  if (PQntuples(run->get()) == 0) return NoSuchRun(id, url_);
  StoredRunInfo info = InfoFromRow(run->get(), 0);
  auto names = BenchmarkNames(id);
  if (!names.ok()) return names.error();
  info.benchmarks = std::move(*names);
  if (Status st = tx->Commit(); !st.ok()) return Fail("cannot end reading", st.error());
  return info;
}

Expected<std::string> PostgresBackend::Document(int64_t id) {
  if (empty_) return NoSuchRun(id, url_);
  const std::string id_text = std::to_string(id);
  auto doc = Exec(conn_.get(), "SELECT document FROM runs WHERE id = $1", {id_text.c_str()},
                  PGRES_TUPLES_OK);
  if (!doc.ok()) return Fail(fmt::format("cannot read id {}", id), doc.error());
  if (PQntuples(doc->get()) == 0) return NoSuchRun(id, url_);
  return Text(doc->get(), 0, 0);
}

}  // namespace

Expected<std::unique_ptr<Backend>> Open(const std::string& url, ResultStore::Mode mode) {
  KSTACKLAB_RETURN_IF_ERROR(CheckUrl(url));
  auto conn = Connect(url);
  if (!conn.ok()) return conn.error();
  KSTACKLAB_RETURN_IF_ERROR(Configure(conn->get(), url, mode));
  auto version = ReadVersion(conn->get(), url);
  if (!version.ok()) return version.error();
  if (*version > kStoreSchemaVersion) return TooNewSchema(url, *version);
  // A reader of a database without kstacklab's tables creates nothing: it reads as empty.
  const bool empty = *version == 0 && mode == ResultStore::Mode::kExisting;
  if (mode == ResultStore::Mode::kCreate) {
    bool current = false;
    if (*version != 0) {
      auto index = HasCopyIndex(conn->get(), url);
      if (!index.ok()) return index.error();
      current = *index;
    }
    if (!current) KSTACKLAB_RETURN_IF_ERROR(CreateTables(conn->get(), url));
  }
  return std::unique_ptr<Backend>(std::make_unique<PostgresBackend>(
      std::move(*conn), url, empty, mode == ResultStore::Mode::kExisting));
}

}  // namespace kstacklab::store::store_internal::pg
