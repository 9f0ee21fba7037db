// `kstacklab completion bash|zsh` (and the hidden `completion man`): shell completion and the man
// page, generated from the command-line definitions themselves (the CLI11 tree every command
// builds), so neither can drift from the options kstacklab really takes. `cmake --install` and
// the Debian package install what these print (CMakeLists.txt, docs/install.md).
#include <fmt/format.h>

#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli_util.h"
#include "command.h"
#include "kstacklab/campaign/engines.h"
#include "kstacklab/campaign/plan_fields.h"
#include "kstacklab/campaign/remote.h"  // ShellQuote: the one quoting for a shell
#include "kstacklab/common/text.h"

namespace kstacklab::cli {
namespace {

using campaign::ShellQuote;

// One option or positional argument as a user sees it.
struct OptionDoc {
  std::vector<std::string> names;  // "-o", "--output"; a positional: its name ("FILE")
  bool positional = false;
  bool takes_value = true;           // false for a flag
  std::string value;                 // placeholder: "FILE", "N", "{grid|markdown}"
  std::vector<std::string> choices;  // the values it accepts, when they are a fixed set
  bool path = false;                 // its value is a file or directory
  std::string description;
};

// One command (or subcommand) with everything below it.
struct CommandDoc {
  std::string path;  // "" for kstacklab itself, "results list"
  std::string summary;
  std::string footer;
  std::vector<OptionDoc> options;
  std::vector<CommandDoc> children;
};

// Options whose value is a path although their type does not say so.
bool PathOption(const std::string& long_name) {
  static const std::set<std::string> k = {
      "--output",  "--store",        "--dir",           "--resume",   "--report",
      "--records", "--save-records", "--kernel",        "--from",     "--to",
      "--initrd",  "--config",       "--recovery-file", "--fastpath", "--kstacklab"};
  return k.count(long_name) > 0;
}

OptionDoc DescribeOption(const CLI::Option& opt) {
  OptionDoc doc;
  doc.positional = !opt.nonpositional();
  if (doc.positional) {
    doc.names = {opt.get_name(true)};
  } else {
    for (const std::string& s : opt.get_snames()) doc.names.push_back("-" + s);
    for (const std::string& l : opt.get_lnames()) doc.names.push_back("--" + l);
  }
  doc.takes_value = opt.get_expected_max() > 0;  // 0: a flag
  doc.description = opt.get_description();
  const std::string type = opt.get_type_name();
  std::smatch m;
  static const std::regex kChoices(R"(\{([^{}]*)\})");
  if (std::regex_search(type, m, kChoices)) {
    for (std::string& c : Split(m[1].str(), ',')) {
      if (!c.empty()) doc.choices.push_back(Trim(c));
    }
  }
  const std::string head = type.substr(0, type.find(':'));
  doc.path = doc.choices.empty() &&
             (doc.positional || head.find("FILE") != std::string::npos ||
              head.find("PATH") != std::string::npos || head.find("DIR") != std::string::npos ||
              (!opt.get_lnames().empty() && PathOption("--" + opt.get_lnames().front())));
  if (!doc.choices.empty()) {
    doc.value = "{" + fmt::format("{}", fmt::join(doc.choices, "|")) + "}";
  } else if (doc.positional) {
    doc.value = doc.names.front();
  } else if (doc.path) {
    doc.value = head == "PATH" || head == "DIR" ? head : "FILE";
  } else if (head == "UINT" || head == "INT") {
    doc.value = "N";
  } else if (head == "FLOAT") {
    doc.value = "X";
  } else {
    doc.value = "VALUE";
  }
  return doc;
}

// The tree below `app`; hidden commands and options (CLI11 group "") are left out.
CommandDoc Describe(const CLI::App& app, const std::string& path) {
  CommandDoc doc;
  doc.path = path;
  doc.summary = app.get_description();
  doc.footer = app.get_footer();
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_group().empty()) continue;
    doc.options.push_back(DescribeOption(*opt));
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_group().empty()) continue;
    doc.children.push_back(
        Describe(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name()));
  }
  return doc;
}

std::string LastWord(const std::string& path) {
  const size_t space = path.rfind(' ');
  return space == std::string::npos ? path : path.substr(space + 1);
}

// Every command in the tree, depth first.
void Flatten(const CommandDoc& doc, std::vector<const CommandDoc*>* out) {
  out->push_back(&doc);
  for (const CommandDoc& c : doc.children) Flatten(c, out);
}

// The subcommand-path walk, the option-value cases and the words per path, shared by the two
// shells (both read `case` alike here); `shell` picks the few words that differ.
std::string CaseBlocks(const CommandDoc& root, bool zsh) {
  std::vector<const CommandDoc*> all;
  Flatten(root, &all);
  const char* open = zsh ? "(" : "";
  std::string s;
  s += "  for ((i = " + std::string(zsh ? "2" : "1") + "; i < " + (zsh ? "CURRENT" : "COMP_CWORD") +
       "; i++)); do\n";
  s += std::string("    w=") + (zsh ? "${words[i]}" : "${COMP_WORDS[i]}") + "\n";
  s += "    case \"$kpath $w\" in\n";
  for (const CommandDoc* c : all) {
    if (c->path.empty()) continue;
    s += fmt::format("      {}{}) kpath=\"$kpath $w\" ;;\n", open, ShellQuote(" " + c->path));
  }
  s += "    esac\n  done\n  kpath=${kpath# }\n";
  // The value after an option: its choices, a file, or nothing to offer.
  s += "  case \"$kpath|$prev\" in\n";
  for (const CommandDoc* c : all) {
    for (const OptionDoc& o : c->options) {
      if (o.positional || !o.takes_value) continue;
      std::vector<std::string> pats;
      for (const std::string& n : o.names) pats.push_back(ShellQuote(c->path + "|" + n));
      const std::string pattern = fmt::format("{}", fmt::join(pats, "|"));
      std::string action;
      if (!o.choices.empty()) {
        std::vector<std::string> q;
        for (const std::string& v : o.choices) q.push_back(ShellQuote(v));
        action = zsh ? fmt::format("compadd -- {}; return", fmt::join(q, " "))
                     : fmt::format("values={}; return_words=1",
                                   ShellQuote(fmt::format("{}", fmt::join(o.choices, " "))));
      } else if (o.path) {
        action = zsh ? "_files; return" : "files=1; return_words=1";
      } else {
        action = zsh ? fmt::format("_message {}; return", ShellQuote(o.value)) : "return 0";
      }
      s += fmt::format("    {}{}) {} ;;\n", open, pattern, action);
    }
  }
  s += "  esac\n";
  return s;
}

std::string BashScript(const CommandDoc& root) {
  std::vector<const CommandDoc*> all;
  Flatten(root, &all);
  std::string s =
      "# bash completion for kstacklab, generated from its command-line definitions by\n"
      "# `kstacklab completion bash` (" +
      VersionText() + "). Do not edit.\n";
  s += "_kstacklab() {\n";
  s += "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n";
  s += "  local kpath=\"\" i w values=\"\" files=0 return_words=0\n";
  s += "  COMPREPLY=()\n";
  s += CaseBlocks(root, false);
  s += "  if [ \"$return_words\" -eq 0 ]; then\n    case \"$kpath\" in\n";
  for (const CommandDoc* c : all) {
    std::vector<std::string> words;
    bool files = false;
    for (const CommandDoc& child : c->children) words.push_back(LastWord(child.path));
    for (const OptionDoc& o : c->options) {
      if (o.positional) {
        files = files || o.path;
        for (const std::string& v : o.choices) words.push_back(v);
      } else {
        words.insert(words.end(), o.names.begin(), o.names.end());
      }
    }
    s += fmt::format("      {}) values={}; files={} ;;\n", ShellQuote(c->path),
                     ShellQuote(fmt::format("{}", fmt::join(words, " "))), files ? 1 : 0);
  }
  s += "    esac\n  fi\n";
  s += "  if [ \"$files\" -eq 1 ] && [[ $cur != -* ]]; then\n";
  s += "    compopt -o filenames 2>/dev/null\n";
  s += "    mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n  fi\n";
  s += "  local word\n";
  s += "  for word in $values; do\n";
  s += "    [[ $word == \"$cur\"* ]] && COMPREPLY+=(\"$word\")\n  done\n";
  s += "  return 0\n}\n";
  s += "complete -F _kstacklab kstacklab\n";
  return s;
}

// "name:description" for zsh's _describe, with a colon in the name escaped.
std::string Described(const std::string& name, const std::string& description) {
  std::string n;
  for (char c : name) {
    if (c == ':') n += '\\';
    n += c;
  }
  return ShellQuote(n + ":" + description);
}

std::string ZshScript(const CommandDoc& root) {
  std::vector<const CommandDoc*> all;
  Flatten(root, &all);
  std::string s = "#compdef kstacklab\n";
  s += "# zsh completion for kstacklab, generated from its command-line definitions by\n"
       "# `kstacklab completion zsh` (" +
       VersionText() + "). Do not edit.\n";
  s += "_kstacklab() {\n";
  s += "  local kpath=\"\" i w prev=${words[CURRENT-1]} files=0\n";
  s += "  local -a items\n";
  s += CaseBlocks(root, true);
  s += "  case \"$kpath\" in\n";
  for (const CommandDoc* c : all) {
    std::vector<std::string> items;
    bool files = false;
    for (const CommandDoc& child : c->children) {
      items.push_back(Described(LastWord(child.path), child.summary));
    }
    for (const OptionDoc& o : c->options) {
      if (o.positional) {
        files = files || o.path;
        for (const std::string& v : o.choices) items.push_back(Described(v, o.description));
        continue;
      }
      for (const std::string& n : o.names) items.push_back(Described(n, o.description));
    }
    s += fmt::format("    ({}) items=({}); files={} ;;\n", ShellQuote(c->path),
                     fmt::join(items, " "), files ? 1 : 0);
  }
  s += "  esac\n";
  s += "  _describe -t kstacklab 'kstacklab' items\n";
  s += "  (( files )) && _files\n";
  s += "  return 0\n}\n";
  s += "_kstacklab \"$@\"\n";
  return s;
}

// Text for roff: backslashes doubled as \e, a leading '.' or '\'' made literal, '-' as \- (a
// hyphen that copies as the ASCII minus an option needs).
std::string Roff(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

void ManCommand(const CommandDoc& c, std::string* s) {
  if (!c.path.empty()) {
    *s += fmt::format(".SS \"kstacklab {}\"\n{}\n", Roff(c.path), Roff(c.summary));
  }
  for (const OptionDoc& o : c.options) {
    // Every command's -h/--help is said once, in the DESCRIPTION.
    if (!c.path.empty() && o.names.back() == "--help") continue;
    std::vector<std::string> names;
    for (const std::string& n : o.names) names.push_back("\\fB" + Roff(n) + "\\fR");
    std::string head = fmt::format("{}", fmt::join(names, ", "));
    if (o.positional) head = "\\fI" + Roff(o.names.front()) + "\\fR";
    if (o.takes_value && !o.positional) head += " \\fI" + Roff(o.value) + "\\fR";
    *s += fmt::format(".TP\n{}\n{}\n", head, Roff(o.description));
  }
  if (!c.footer.empty() && !c.path.empty()) *s += fmt::format(".PP\n{}\n", Roff(c.footer));
  for (const CommandDoc& child : c.children) ManCommand(child, s);
}

std::string ManPage(const CommandDoc& root) {
  std::string s = fmt::format(
      ".\\\" Generated from kstacklab's command-line definitions by `kstacklab completion man`.\n"
      ".TH KSTACKLAB 1 \"\" \"{}\" \"User Commands\"\n",
      Roff(VersionText()));
  s += ".SH NAME\nkstacklab \\- measure and model Linux kernel stack hardening\n";
  s += ".SH SYNOPSIS\n.B kstacklab\n.I command\n[\\fIoptions\\fR]\n.br\n.B kstacklab\n"
       "\\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR\n";
  s += ".SH DESCRIPTION\n"
       "kstacklab measures what kernel stack hardening costs (every syscall timed on the running "
       "kernel, mean and tails, compared with multi-level statistics in the kernel lists' table "
       "format) and what it buys (each design modelled bit-exactly and attacked), and drives "
       "boot campaigns that decide from the data how many boots a comparison needs.\n"
       ".PP\nResults go to standard output; progress, warnings and errors to standard error. "
       "Every command takes \\fB\\-\\-help\\fR.\n";
  s += ".SH COMMANDS\n";
  for (const CommandDoc& c : root.children) ManCommand(c, &s);
  s += ".SH EXIT STATUS\n.TP\n0\nsuccess\n.TP\n1\na runtime failure (the machine, a file, a "
       "server)\n.TP\n2\na usage or input error; the message names the flag or value and the "
       "fix\n.TP\n128 + N\n\\fBrun\\fR, \\fBcampaign\\fR and \\fBplot\\fR ended by signal N "
       "(after writing what was completed)\n";
  s += ".SH ENVIRONMENT\n.TP\n.B KSTACKLAB_STORE\nthe results store used when \\fB\\-\\-store\\fR "
       "is not given: a file path or a postgresql:// URL\n.TP\n.B XDG_DATA_HOME\nwhere the "
       "default store lives ($XDG_DATA_HOME/kstacklab/results.db)\n.TP\n.B PGPASSFILE, "
       "PGSERVICE, PGSERVICEFILE\nlibpq's own: where a PostgreSQL store's password and "
       "connection settings come from (never from the command line)\n";
  s += ".SH FILES\n.TP\n.I ~/.local/share/kstacklab/results.db\nthe default results store\n"
       ".TP\n.I /run/kstacklab/\nlocks and recovery files of \\fBrun \\-\\-ab\\fR\n";
  s += ".SH SEE ALSO\nThe documentation in /usr/share/doc/kstacklab (README.md and docs/), "
       "\\fBperf\\fR(1), \\fBqemu\\-system\\-x86_64\\fR(1), \\fBpsql\\fR(1)\n";
  return s;
}

// A field's values in words, from its kind and range.
std::string FieldValues(const campaign::PlanField& f) {
  using campaign::FieldKind;
  switch (f.kind) {
    case FieldKind::kCount:
      // A 64-bit range's top (a seed) is not exact as a double: name it.
      return f.hi >= 1.8e19 ? fmt::format("an integer from {:.0f} to 2^64 - 1", f.lo)
                            : fmt::format("an integer from {:.0f} to {:.0f}", f.lo, f.hi);
    case FieldKind::kNumber:
      return fmt::format("a number from {:g} to {:g}", f.lo, f.hi);
    case FieldKind::kDuration:
      return fmt::format("a duration from {:.0f} s to {:.0f} s, with a unit (`{}`, `90min`, `30s`)",
                         f.lo, f.hi, f.example != nullptr ? f.example : "6h");
    case FieldKind::kBool:
      return "`true` or `false`";
    case FieldKind::kText:
      return fmt::format("text, at most {:g} bytes", f.hi);
    case FieldKind::kPath:
      return "a path (a plan file's relative path is taken from the file's directory)";
    case FieldKind::kChoice:
      return f.alias != nullptr
                 ? fmt::format("`{}` (or `{}`) or `{}`", f.choices[0], f.alias, f.choices[1])
                 : fmt::format("`{}` or `{}`", f.choices[0], f.choices[1]);
    case FieldKind::kWords:
      return fmt::format("a list of at most {:g} words", f.hi);
  }
  return "";
}

// A table cell: `|` escaped, newlines as spaces.
std::string Cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c == '\n' ? ' ' : c;
    }
  }
  return out;
}

// A field's help as the plan file's reference says it: without the "Shorthand: " its flag's
// --help starts with, and with a capital.
std::string KeyHelp(std::string_view help) {
  constexpr std::string_view kPrefix = "Shorthand: ";
  if (help.substr(0, kPrefix.size()) == kPrefix) help.remove_prefix(kPrefix.size());
  std::string out(help);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z')
    out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

// docs/plan-keys.md: every key of a plan file outside the profiles, from the plan's field table
// and the engine table (ctest plan_keys_doc compares the file with this).
std::string PlanKeysDoc() {
  using campaign::PlanPart;
  std::string s =
      "# Campaign plan keys\n\n"
      "Generated by `kstacklab completion plan-keys` from the plan's field table\n"
      "(src/campaign/plan_fields.cc) and the engine table (src/campaign/engines.cc); the ctest\n"
      "`plan_keys_doc` fails when this file differs from it. docs/campaign.md explains the plan\n"
      "file, its profiles and each engine's keys in context; `kstacklab campaign --help` lists "
      "the\n"
      "shorthand's flags.\n";
  const struct {
    PlanPart part;
    const char* title;
  } parts[] = {{PlanPart::kPlan, "Top level"},
               {PlanPart::kTarget, "`target:` (the precision rule)"},
               {PlanPart::kOrder, "`order:`"}};
  for (const auto& p : parts) {
    s += fmt::format("\n## {}\n\n", p.title);
    s += "| key | value | default | shorthand flag | what |\n|---|---|---|---|---|\n";
    for (const campaign::PlanField& f : campaign::PlanFields()) {
      if (f.part != p.part) continue;
      std::string def = f.required ? "required" : campaign::FieldDefault(f);
      if (def.empty()) def = "—";
      s +=
          fmt::format("| `{}` | {} | {} | {} | {} |\n", f.key, Cell(FieldValues(f)),
                      def == "—" || def == "required" ? def : "`" + Cell(def) + "`",
                      f.flag != nullptr ? fmt::format("`{}`", f.flag) : "—", Cell(KeyHelp(f.help)));
    }
  }
  s += "\n## `engine:`\n\n`name` chooses the engine (default `qemu`); its other keys:\n\n";
  s += "| engine | what | keys |\n|---|---|---|\n";
  for (const campaign::EngineRow& e : campaign::Engines()) {
    std::vector<std::string> keys;
    for (std::string_view k : e.yaml_keys) keys.push_back(fmt::format("`{}`", k));
    s += fmt::format("| `{}` | {} | {} |\n", e.name, Cell(e.summary), fmt::join(keys, " "));
  }
  s += "\nThe profiles (`profiles:`, a list) are described in docs/campaign.md.\n";
  return s;
}

}  // namespace

Runner SetupCompletionCommand(CLI::App& sub) {
  auto shell = std::make_shared<std::string>();
  sub.add_option("SHELL", *shell,
                 "bash, zsh, man (the manual page, in roff) or plan-keys (docs/plan-keys.md, "
                 "the campaign plan's keys in Markdown)")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "man", "plan-keys"}));
  sub.footer(
      "Install: `kstacklab completion bash > /etc/bash_completion.d/kstacklab`; for zsh, write "
      "`_kstacklab` into a directory on $fpath. The package and `cmake --install` do this.");
  const CLI::App* root = sub.get_parent();
  return [shell, root]() {
    const CommandDoc doc = Describe(*root, "");
    if (*shell == "bash") return PrintStdout(BashScript(doc));
    if (*shell == "zsh") return PrintStdout(ZshScript(doc));
    if (*shell == "plan-keys") return PrintStdout(PlanKeysDoc());
    return PrintStdout(ManPage(doc));
  };
}

}  // namespace kstacklab::cli
