// What the remote engines (ssh, lava) share: the one function that quotes a value for a remote
// POSIX shell, and the job script that runs a boot's measurement on the machine and prints its
// files in the data channel's format (ParseChannel, engine.h), so the machine needs only a shell,
// coreutils' base64 and the kstacklab binary.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kstacklab/campaign/plan.h"
#include "kstacklab/results/results.h"

namespace kstacklab::campaign {

// `word` as one argument of a POSIX shell command line: wrapped in single quotes, each ' written
// as '\'' (POSIX.1-2017 XCU 2.2.3: inside single quotes nothing is special). Nothing in the
// result expands, splits or ends the command; "" becomes ''. ssh(1) hands its remote command to
// the remote user's shell, so every value that crosses it goes through this function.
std::string ShellQuote(std::string_view word);

// The words, each ShellQuote'd, joined by spaces: one shell command running exactly `words`.
std::string ShellCommand(const std::vector<std::string>& words);

// The data channel's file names a boot reports (ParseChannel's `known`).
const std::vector<std::string>& ChannelFileNames();

// The job script (POSIX sh). It takes its values as arguments, never as text it evaluates:
//   sh -c SCRIPT kstacklab-job KSTACKLAB OUT_DIR LABEL STRENGTH_SAMPLES
//        [SYSCTL_NAME VALUE]... -- [RUN_ARG]...
// (STRENGTH_SAMPLES "" = no entropy run). It records uname -r and /proc/cmdline, sets the
// sysctls, runs `KSTACKLAB run --no-store --label LABEL -o OUT_DIR/result.json RUN_ARGS`, and
// prints every file as "kstacklab-file NAME", base64, "kstacklab-end", then "kstacklab-done".
// When LAVA's lava-test-case is on PATH, it also reports the headline figures
// (`kstacklab show --headline`) as test cases with their measurement in ns.
std::string JobScript();

// The job script's arguments after the script ("kstacklab-job" onwards) for `profile`.
std::vector<std::string> JobScriptArgs(const std::string& kstacklab, const std::string& out_dir,
                                       const Profile& profile,
                                       const std::vector<std::string>& run_args, bool strength,
                                       uint64_t strength_samples);

// One figure per benchmark of a result: the mean of its repetitions' means in ns, named as a
// LAVA test case may be named (letters, digits, _ . -): "syscall_getpid_raw.mean".
std::vector<std::pair<std::string, double>> HeadlineFigures(const RunResult& result);

}  // namespace kstacklab::campaign
