// `kstacklab results list|show|export|import|copy`: the results store (docs/store.md).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/loader/load.h"
#include "kstacklab/report/grid_table.h"
#include "kstacklab/report/summary.h"
#include "kstacklab/results/json.h"
#include "kstacklab/results/result_reader.h"
#include "kstacklab/store/store.h"

namespace kstacklab::cli {
namespace {

struct ResultsArgs {
  std::string store;               // "" = DefaultStorePath()
  std::string format = "grid";     // list: grid (or table, the same) | json
  std::string id;                  // show, export
  std::string output;              // export -o
  std::vector<std::string> files;  // import
  std::string from;                // copy
  std::string to;                  // copy
  uint64_t batch = 100;            // copy: runs per transaction
};

// "2026-11-29T18:00:00Z" -> "2026-11-29 18:00" (UTC); other text unchanged.
std::string ShortDate(const std::string& iso) {
  if (iso.size() >= 16 && iso[10] == 'T') return iso.substr(0, 10) + " " + iso.substr(11, 5);
  return iso;
}

std::string BenchmarkColumn(const std::vector<std::string>& names) {
  constexpr size_t kMax = 60;
  std::string out = fmt::format("{}:", names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    std::string next = (i ? ", " : " ") + names[i];
    if (out.size() + next.size() > kMax) {
      out += i ? ", ..." : " ...";
      break;
    }
    out += next;
  }
  return out;
}

// Stored text shown on a terminal: escaped (a store written by an older kstacklab, or by hand,
// may hold control characters), "unknown" when empty.
std::string Or(const std::string& s, const char* unknown) {
  return s.empty() ? unknown : EscapeControl(s);
}

Json InfoToJson(const store::StoredRunInfo& info) {
  auto or_null = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
  return Json{{"id", info.id},
              {"created", or_null(info.created)},
              {"stored_at", info.stored_at},
              {"label", info.label},
              {"tool_version", or_null(info.tool_version)},
              {"kernel", or_null(info.kernel_release)},
              {"host", or_null(info.host)},
              {"partial", info.partial},
              {"benchmarks", info.benchmarks}};
}

std::string RenderList(const std::vector<store::StoredRunInfo>& runs) {
  report::GridTable table;
  table.header = {{"id", "date (UTC)", "label", "kernel", "host", "benchmarks"}};
  table.right_align = {true, false, false, false, false, false};
  std::vector<std::vector<std::string>> rows;
  for (const store::StoredRunInfo& r : runs) {
    rows.push_back({std::to_string(r.id), ShortDate(r.created.empty() ? r.stored_at : r.created),
                    Or(r.label, "-") + (r.partial ? " (partial)" : ""), Or(r.kernel_release, "?"),
                    Or(r.host, "?"), BenchmarkColumn(r.benchmarks)});
  }
  table.groups = {std::move(rows)};
  return report::RenderGrid(table);
}

int RunList(const ResultsArgs& a) {
  const std::string path = StorePath(a.store);
  auto store = store::ResultStore::Open(path, store::ResultStore::Mode::kExisting);
  std::vector<store::StoredRunInfo> runs;
  if (!store.ok()) {
    // Nothing at the path at all (lstat: a dangling link, e.g. another user's in /tmp, is
    // something, and its refusal stands).
    struct stat st {};
    if (store.error().exit_code != kExitUsage || store::IsStoreUrl(path) ||
        lstat(path.c_str(), &st) == 0) {
      return Fail(store.error());
    }
    // No store yet is not an error for listing: there is simply nothing stored.
    Warn(
        fmt::format("no results store at {} yet; `kstacklab run` or `kstacklab results import "
                    "FILE` creates it",
                    path));
  } else {
    auto list = store->List();
    if (!list.ok()) return Fail(list.error());
    runs = std::move(*list);
  }
  if (a.format == "json") {
    Json out = Json::array();
    for (const store::StoredRunInfo& r : runs) out.push_back(InfoToJson(r));
    return PrintStdout(DumpJson(out));
  }
  if (runs.empty()) return kExitOk;
  return PrintStdout(RenderList(runs));
}

int RunShow(const ResultsArgs& a) {
  auto id = loader::ParseStoreId(a.id);
  if (!id.ok()) return Fail(id.error());
  auto store = store::ResultStore::Open(StorePath(a.store), store::ResultStore::Mode::kExisting);
  if (!store.ok()) return Fail(store.error());
  auto info = store->Info(*id);
  if (!info.ok()) return Fail(info.error());
  auto run = store->Get(*id);
  if (!run.ok()) return Fail(run.error());
  std::string head =
      fmt::format("store id {}: {}{}, created {}, kernel {}, host {}, kstacklab {} (stored {})\n",
                  info->id, Or(info->label, "(no label)"), info->partial ? " (partial)" : "",
                  Or(info->created, "?"), Or(info->kernel_release, "?"), Or(info->host, "?"),
                  Or(info->tool_version, "?"), info->stored_at);
  return PrintStdout(head + report::RenderSummary(*run));
}

int RunExport(const ResultsArgs& a) {
  auto id = loader::ParseStoreId(a.id);
  if (!id.ok()) return Fail(id.error());
  if (Status st = CheckWritable(a.output); !st.ok()) {
    Error e = st.error();
    e.message = "-o: " + e.message;
    return Fail(e);
  }
  auto store = store::ResultStore::Open(StorePath(a.store), store::ResultStore::Mode::kExisting);
  if (!store.ok()) return Fail(store.error());
  auto doc = store->Document(*id);
  if (!doc.ok()) return Fail(doc.error());
  Status written = WriteFileAtomic(a.output, *doc);
  if (!written.ok()) return Fail(written.error());
  if (a.output != "-") {
    std::fprintf(stderr, "kstacklab: exported store id %lld to %s\n", static_cast<long long>(*id),
                 a.output.c_str());
  }
  return kExitOk;
}

int RunImport(const ResultsArgs& a) {
  // Validate every file first, then store them in one transaction: all or nothing.
  std::vector<RunResult> results;
  for (const std::string& file : a.files) {
    // "-" goes through the loader, which reads standard input at most once.
    auto r = file == "-" ? loader::LoadResultInput(file, std::string()) : ReadResultFile(file);
    if (!r.ok()) {
      Error e = r.error();
      e.message += " (nothing was imported)";
      return Fail(e);
    }
    results.push_back(std::move(*r));
  }
  auto store = store::ResultStore::Open(StorePath(a.store), store::ResultStore::Mode::kCreate);
  if (!store.ok()) {
    Error e = store.error();
    e.message += " (--store PATH chooses another store)";
    return Fail(e);
  }
  auto ids = store->InsertAll(results);
  if (!ids.ok()) {
    Error e = ids.error();
    e.message += " (nothing was imported)";
    return Fail(e);
  }
  std::string out;
  for (size_t i = 0; i < ids->size(); ++i) {
    out += fmt::format("imported {} as id {}\n", EscapeControl(a.files[i]), (*ids)[i]);
  }
  return PrintStdout(out);
}

// The same store named twice (one file by two paths, or one URL): a copy onto itself.
bool SameStore(const std::string& a, const std::string& b) {
  if (store::IsStoreUrl(a) || store::IsStoreUrl(b)) return a == b;
  std::error_code ec1, ec2;
  const bool same = std::filesystem::equivalent(a, b, ec1);
  return !ec1 && same;
}

int RunCopy(const ResultsArgs& a) {
  if (SameStore(a.from, a.to)) {
    return Fail(UsageError(
        fmt::format("--from and --to name the same store ({}); give two different stores", a.to)));
  }
  auto from = store::ResultStore::Open(a.from, store::ResultStore::Mode::kExisting);
  if (!from.ok()) return Fail(WithFlag("--from", from.error()));
  auto to = store::ResultStore::Open(a.to, store::ResultStore::Mode::kCreate);
  if (!to.ok()) return Fail(WithFlag("--to", to.error()));
  ProgressLine progress("results copy");
  auto outcome = store::CopyRuns(*from, *to, a.batch, progress.Part(0, 1));
  if (!outcome.ok()) {
    Error e = outcome.error();
    e.message +=
        "; the runs copied before are kept, and the same command copies the rest (a copy adds "
        "no run twice)";
    return Fail(e);
  }
  std::string out;
  for (const auto& [src, dst] : outcome->copied) {
    out += fmt::format("copied id {} as id {}\n", src, dst);
  }
  std::fprintf(stderr, "kstacklab: copied %zu run(s) from %s to %s; %zu already there\n",
               outcome->copied.size(), EscapeControl(a.from).c_str(), EscapeControl(a.to).c_str(),
               outcome->present.size());
  return PrintStdout(out);
}

}  // namespace

Runner SetupResultsCommand(CLI::App& sub) {
  auto a = std::make_shared<ResultsArgs>();
  sub.require_subcommand(0, 1);  // none: the runner says which exist; unknown: CLI11 names it
  AddStoreOption(sub, &a->store);
  sub.footer("Store ids are also accepted wherever a result FILE is (`compare 3 7`, `plot 3`).");

  CLI::App* list = sub.add_subcommand(
      "list", "One line per stored result: id, date, label, kernel, host, benchmarks");
  list->fallthrough();
  list->add_option("--format", a->format, kGridOrJsonHelp)
      ->check(CLI::IsMember({"grid", "table", "json"}));

  CLI::App* show = sub.add_subcommand("show", "Print the summary table of a stored result");
  show->fallthrough();
  show->add_option("ID", a->id, "Store id (17 or id:17)")->required();

  CLI::App* exp = sub.add_subcommand("export", "Write a stored result back to a result file");
  exp->fallthrough();
  exp->add_option("ID", a->id, "Store id (17 or id:17)")->required();
  exp->add_option("-o,--output", a->output, "Output file (written atomically); - for stdout")
      ->required();

  CLI::App* imp = sub.add_subcommand("import", "Validate result files and add them to the store");
  imp->fallthrough();
  imp->add_option("FILE", a->files, "Result files (- for stdin)")->required();

  CLI::App* copy = sub.add_subcommand(
      "copy", "Copy the runs of one store that another lacks (SQLite <-> PostgreSQL)");
  copy->add_option("--from", a->from, "Store to copy from (read only): a file or a URL")
      ->required();
  copy->add_option("--to", a->to, "Store to copy to (created as needed): a file or a URL")
      ->required();
  copy->add_option("--batch", a->batch, "Runs per transaction (default 100)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{10000}));

  return [a, list, show, exp, imp, copy]() {
    if (list->parsed()) return RunList(*a);
    if (show->parsed()) return RunShow(*a);
    if (exp->parsed()) return RunExport(*a);
    if (imp->parsed()) return RunImport(*a);
    if (copy->parsed()) return RunCopy(*a);
    return Fail(UsageError("results needs a subcommand: list, show, export, import or copy"));
  };
}

}  // namespace kstacklab::cli
