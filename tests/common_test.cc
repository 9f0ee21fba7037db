// common/: the text checks for labels and names, file output with the CLI's guarantees
// (special files written through, modes kept, umask honoured, paths checked before measuring),
// the header-only pieces every module shares (moments, the dice), and the one child-process
// launcher (program lookup, how a stopped or late child ends).
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "kstacklab/common/cpu_list.h"
#include "kstacklab/common/dice.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/moments.h"
#include "kstacklab/common/subprocess.h"
#include "kstacklab/common/text.h"

namespace kstacklab {
namespace {

namespace fs = std::filesystem;

// Hand-computed: {1, 2, 3, 4}: sum 10, sum of squares 1+4+9+16 = 30, mean 2.5,
// variance (30 - 4 * 2.5^2) / 3 = (30 - 25) / 3 = 5/3.
TEST(Moments, SampleVarianceFromRunningSums) {
  RunningMoments m;
  for (double x : {1.0, 2.0, 3.0, 4.0}) m.Add(x);
  EXPECT_EQ(m.n, 4u);
  EXPECT_DOUBLE_EQ(m.sum, 10.0);
  EXPECT_DOUBLE_EQ(m.sum_sq, 30.0);
  EXPECT_DOUBLE_EQ(SampleVariance(m), 5.0 / 3.0);
  // Edge cases: fewer than two values -> NaN; cancellation below 0 -> clamped to 0
  // (n = 2, sum 2, sum_sq 1.9999999: (1.9999999 - 2 * 1^2) / 1 < 0).
  EXPECT_TRUE(std::isnan(SampleVarianceFromSums(1, 5, 25)));
  EXPECT_TRUE(std::isnan(SampleVariance(RunningMoments{})));
  EXPECT_EQ(SampleVarianceFromSums(2, 2, 1.9999999), 0.0);
}

// The published SplitMix64 outputs for seed 0 (Vigna's splitmix64.c): the attacks' simulations
// and live's shuffles draw from this one generator.
TEST(Dice, SplitMix64ReferenceOutputs) {
  Dice d(0);
  EXPECT_EQ(d.Next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(d.Next(), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(d.Next(), 0x06C45D188009454Full);
  EXPECT_EQ(d.Next(), 0xF88BB8A8724C81ECull);
  Dice u(42);
  for (int i = 0; i < 1000; ++i) {
    const double x = u.Unit();
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 1.0);
    ASSERT_LT(u.Below(7), 7u);
  }
}

TEST(Text, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_FALSE(IsValidUtf8("b\xe9se"));                                   // Latin-1
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));                                  // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));                              // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));                          // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));                                  // truncated
}

TEST(Text, ProblemsNameTheByteAndOffset) {
  EXPECT_FALSE(TextProblem("6.18 rnd-on").has_value());
  EXPECT_EQ(TextProblem(std::string("ab\0c", 4)).value_or(""),
            "contains the control character U+0000 at offset 2");
  EXPECT_EQ(TextProblem("a\nb").value_or(""), "contains the control character U+000A at offset 1");
  EXPECT_EQ(TextProblem("\x1b[2J").value_or(""),
            "contains the control character U+001B at offset 0");
  EXPECT_EQ(TextProblem("x\xc2\x9b").value_or(""),  // C1 CSI
            "contains the control character U+009B at offset 1");
  EXPECT_EQ(TextProblem("b\xe9se").value_or(""), "is not valid UTF-8 (byte 0xe9 at offset 1)");
}

TEST(Text, EscapeControlLeavesCleanTextAlone) {
  EXPECT_EQ(EscapeControl("caf\xc3\xa9 | x"), "caf\xc3\xa9 | x");
  EXPECT_EQ(EscapeControl(std::string("a\0b\n\x1b[31m", 9)), "a\\x00b\\x0a\\x1b[31m");
  EXPECT_EQ(EscapeControl("b\xe9se"), "b\\xe9se");
  EXPECT_FALSE(TextProblem(EscapeControl("\x01\xff\xc2\x9b")).has_value());
}

// Labels that render alike are refused (zero-width, bidirectional controls); tables
// align by terminal columns, not bytes.
TEST(Text, InvisibleCharactersAndDisplayWidth) {
  EXPECT_FALSE(InvisibleProblem("rnd-on").has_value());
  EXPECT_FALSE(InvisibleProblem("d\u00e9j\u00e0 \u4e2d").has_value());  // visible non-ASCII
  EXPECT_FALSE(InvisibleProblem("\xd0\xb0").has_value());               // Cyrillic a: legitimate
  for (const char* bad : {"a\u200bb", "a\u202eb", "\ufeffa", "a\u2066b", "a\u00adb"}) {
    auto p = InvisibleProblem(bad);
    ASSERT_TRUE(p.has_value()) << bad;
    EXPECT_NE(p->find("U+"), std::string::npos);
  }
  EXPECT_EQ(*InvisibleProblem("ab\u200d"), InvisibleProblem("ab\u200d").value());
  EXPECT_NE(InvisibleProblem("ab\u200d")->find("U+200D at offset 2"), std::string::npos);
  EXPECT_EQ(DisplayWidth("abc"), 3u);
  EXPECT_EQ(DisplayWidth("d\u00e9j\u00e0"), 4u);  // 6 bytes, 4 columns
  EXPECT_EQ(DisplayWidth("\u4e2d\u6587"), 4u);    // wide: 2 columns each
  EXPECT_EQ(DisplayWidth("e\u0301"), 1u);         // combining acute
  EXPECT_EQ(DisplayWidth("\xff"), 1u);            // a malformed byte: one column
  EXPECT_EQ(DisplayWidth(""), 0u);
}

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kstacklab-fileio-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static std::string Slurp(const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static unsigned Mode(const std::string& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0);
    return st.st_mode & 07777;
  }
  std::string dir_;
};

TEST_F(FileIoTest, ExistingFileKeepsItsModeAndNewFileHonoursTheUmask) {
  const std::string keep = dir_ + "/keep.json";
  { std::ofstream(keep) << "old"; }
  ::chmod(keep.c_str(), 0600);
  ASSERT_TRUE(WriteFileAtomic(keep, "new\n").ok());
  EXPECT_EQ(Slurp(keep), "new\n");
  EXPECT_EQ(Mode(keep), 0600u);

  const mode_t old = ::umask(077);
  Status st = WriteFileAtomic(dir_ + "/fresh.json", "x");
  ::umask(old);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(Mode(dir_ + "/fresh.json"), 0600u);
  for (const auto& e : fs::directory_iterator(dir_)) {  // no temporary left behind
    EXPECT_EQ(e.path().filename().string().rfind(".kstacklab-", 0), std::string::npos);
  }
}

TEST_F(FileIoTest, SpecialFilesAreWrittenThroughNeverReplaced) {
  ASSERT_TRUE(WriteFileAtomic("/dev/null", "discarded").ok());
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));

  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int rfd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // a reader, so the writer can open
  ASSERT_GE(rfd, 0);
  ASSERT_TRUE(WriteFileAtomic(fifo, "through").ok());
  char buf[16] = {};
  EXPECT_EQ(::read(rfd, buf, sizeof buf), 7);
  EXPECT_EQ(std::string(buf, 7), "through");
  ::close(rfd);
  EXPECT_TRUE(fs::is_fifo(fifo));

  // A symlink to a regular file: the target is replaced, the link kept.
  const std::string target = dir_ + "/real";
  { std::ofstream(target) << "old"; }
  fs::create_symlink("real", dir_ + "/link");
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/link", "new").ok());
  EXPECT_TRUE(fs::is_symlink(dir_ + "/link"));
  EXPECT_EQ(Slurp(target), "new");
}

// fs.protected_symlinks, enforced by kstacklab itself: another user's link in a sticky,
// world-writable directory is never written through; this user's own links, and links in a
// private directory, are.
TEST_F(FileIoTest, ForeignSymlinksInSharedDirectoriesAreRefused) {
  const std::string shared = dir_ + "/shared";
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  const std::string victim = dir_ + "/victim";
  { std::ofstream(victim) << "precious"; }
  const std::string own = shared + "/own.json";
  fs::create_symlink(victim, own);
  EXPECT_TRUE(CheckSymlinkOwner(own).ok());
  EXPECT_TRUE(CheckSymlinkOwner(victim).ok());  // not a link
  if (::geteuid() != 0) GTEST_SKIP() << "making a link owned by another user needs root";
  const std::string foreign = shared + "/out.json";
  fs::create_symlink(victim, foreign);
  ASSERT_EQ(::lchown(foreign.c_str(), 65534, 65534), 0);
  Status check = CheckWritable(foreign);
  ASSERT_FALSE(check.ok());
  EXPECT_EQ(check.error().exit_code, kExitUsage);
  EXPECT_NE(check.error().message.find("made by uid 65534"), std::string::npos)
      << check.error().message;
  Status write = WriteFileAtomic(foreign, "pwned");
  ASSERT_FALSE(write.ok());
  EXPECT_EQ(Slurp(victim), "precious");
  // A link to a device is refused the same way (it would be written through).
  const std::string dev = shared + "/dev.json";
  fs::create_symlink("/dev/null", dev);
  ASSERT_EQ(::lchown(dev.c_str(), 65534, 65534), 0);
  EXPECT_FALSE(WriteFileAtomic(dev, "x").ok());
  // The directory's owner (root here) may link: the link is followed.
  ASSERT_EQ(::lchown(foreign.c_str(), 0, 0), 0);
  ASSERT_TRUE(WriteFileAtomic(foreign, "mine").ok());
  EXPECT_EQ(Slurp(victim), "mine");
  // Another user's link in a directory that is not shared is followed (as the kernel does).
  ASSERT_EQ(::chmod(shared.c_str(), 0755), 0);
  ASSERT_EQ(::lchown(foreign.c_str(), 65534, 65534), 0);
  EXPECT_TRUE(CheckSymlinkOwner(foreign).ok());
}

TEST_F(FileIoTest, FullDeviceIsARuntimeError) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  Status st = WriteFileAtomic("/dev/full", std::string(100000, 'x'));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().exit_code, kExitRuntime);
  EXPECT_NE(st.error().message.find("No space left"), std::string::npos) << st.error().message;
  struct stat s {};
  ASSERT_EQ(::stat("/dev/full", &s), 0);
  EXPECT_TRUE(S_ISCHR(s.st_mode));
}

TEST_F(FileIoTest, CheckWritableRefusesBadPathsBeforeAnyWork) {
  EXPECT_TRUE(CheckWritable("-").ok());
  EXPECT_TRUE(CheckWritable(dir_ + "/out.json").ok());
  EXPECT_TRUE(CheckWritable("/dev/null").ok());
  for (const std::string& bad : {std::string(), dir_, dir_ + "/", dir_ + "/missing/out.json"}) {
    Status st = CheckWritable(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.error().exit_code, kExitUsage) << bad;
    // The message quotes the path, whose random mkdtemp suffix may itself hold "-o": look for
    // the flag in the message without the path.
    std::string message = st.error().message;
    for (size_t at; (at = message.find(dir_)) != std::string::npos;) message.erase(at, dir_.size());
    EXPECT_EQ(message.find("-o"), std::string::npos) << "library names a flag: " << message;
  }
  EXPECT_TRUE(fs::is_empty(dir_));  // the probe left nothing
}

// Every link on the way, not only the last component. Another user's link to a
// directory (a component) and a chain through another user's link are refused like a link at
// the end; a dangling link's target is created through the link; a loop is refused (ELOOP).
TEST_F(FileIoTest, LinksAsComponentsAndChainsPassTheStickyRule) {
  const std::string shared = dir_ + "/shared";
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  const std::string real = dir_ + "/real";
  ASSERT_EQ(::mkdir(real.c_str(), 0700), 0);
  const std::string victim = real + "/victim.json";
  { std::ofstream(victim) << "precious"; }
  // Dangling: created through the link, the link kept.
  fs::create_symlink(dir_ + "/new.json", dir_ + "/dangling");
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/dangling", "made").ok());
  EXPECT_TRUE(fs::is_symlink(dir_ + "/dangling"));
  EXPECT_EQ(Slurp(dir_ + "/new.json"), "made");
  // A loop: refused before any work (a usage error), and by the writer.
  fs::create_symlink("loop-b", dir_ + "/loop-a");
  fs::create_symlink("loop-a", dir_ + "/loop-b");
  Status loop = CheckWritable(dir_ + "/loop-a");
  ASSERT_FALSE(loop.ok());
  EXPECT_EQ(loop.error().exit_code, kExitUsage);
  EXPECT_NE(loop.error().message.find("too many levels of symbolic links"), std::string::npos);
  EXPECT_FALSE(WriteFileAtomic(dir_ + "/loop-a", "x").ok());
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ + "/loop-a")));  // not replaced by a file
  // One's own link to a directory as a component is followed.
  fs::create_symlink(real, shared + "/mine");
  ASSERT_TRUE(WriteFileAtomic(shared + "/mine/own.json", "ok").ok());
  EXPECT_EQ(Slurp(real + "/own.json"), "ok");
  if (::geteuid() != 0) GTEST_SKIP() << "making a link owned by another user needs root";
  const std::string component = shared + "/theirs";
  fs::create_symlink(real, component);
  ASSERT_EQ(::lchown(component.c_str(), 65534, 65534), 0);
  for (const std::string& path : {component + "/victim.json", component + "/../real/victim.json"}) {
    Status check = CheckWritable(path);
    ASSERT_FALSE(check.ok()) << path;
    EXPECT_EQ(check.error().exit_code, kExitUsage);
    EXPECT_NE(check.error().message.find("made by uid 65534"), std::string::npos)
        << check.error().message;
    EXPECT_FALSE(WriteFileAtomic(path, "pwned").ok()) << path;
    EXPECT_FALSE(CheckSymlinkOwner(path).ok()) << path;
  }
  // A chain: our own link -> their link -> the victim.
  const std::string theirs = shared + "/hop";
  fs::create_symlink(victim, theirs);
  ASSERT_EQ(::lchown(theirs.c_str(), 65534, 65534), 0);
  const std::string ours = dir_ + "/start.json";
  fs::create_symlink(theirs, ours);
  EXPECT_FALSE(CheckWritable(ours).ok());
  EXPECT_FALSE(WriteFileAtomic(ours, "pwned").ok());
  EXPECT_EQ(Slurp(victim), "precious");
  // Another user's file in the shared directory is not ours to replace.
  const std::string their_file = shared + "/their.json";
  { std::ofstream(their_file) << "theirs"; }
  ASSERT_EQ(::chown(their_file.c_str(), 65534, 65534), 0);
  EXPECT_FALSE(CheckWritable(their_file).ok());
  EXPECT_FALSE(WriteFileAtomic(their_file, "x").ok());
  EXPECT_EQ(Slurp(their_file), "theirs");
}

// A write-protected file is refused as `cp` without -f refuses it (as root too), and a file that
// cannot be opened for writing (a socket) is found before any work.
TEST_F(FileIoTest, WriteProtectedFilesAndSocketsAreRefused) {
  const std::string ro = dir_ + "/ro.json";
  { std::ofstream(ro) << "keep"; }
  ASSERT_EQ(::chmod(ro.c_str(), 0444), 0);
  Status check = CheckWritable(ro);
  ASSERT_FALSE(check.ok());
  EXPECT_EQ(check.error().exit_code, kExitUsage);
  EXPECT_NE(check.error().message.find("write-protected (mode 0444)"), std::string::npos)
      << check.error().message;
  EXPECT_FALSE(WriteFileAtomic(ro, "new").ok());
  EXPECT_EQ(Slurp(ro), "keep");
  // "-o FILE/x.json" where FILE is a file: says it is not a directory.
  Status under = CheckWritable(ro + "/x.json");
  ASSERT_FALSE(under.ok());
  EXPECT_NE(under.error().message.find("is not a directory"), std::string::npos)
      << under.error().message;
}

// SQLite side files of a store (NAME-wal, NAME-shm, NAME-journal) are refused like the store.
TEST_F(FileIoTest, SqliteSideFilesAreRefused) {
  const std::string db = dir_ + "/results.db";
  { std::ofstream(db) << std::string("SQLite format 3\0", 16) << std::string(100, '\0'); }
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    Status st = CheckWritable(db + suffix);
    ASSERT_FALSE(st.ok()) << suffix;
    EXPECT_EQ(st.error().exit_code, kExitUsage);
    EXPECT_NE(st.error().message.find("SQLite database"), std::string::npos) << st.error().message;
  }
  EXPECT_TRUE(CheckWritable(dir_ + "/other.db-wal").ok());  // no database beside it
  const std::string wal = dir_ + "/orphan-wal";
  { std::ofstream(wal) << std::string("\x37\x7f\x06\x82", 4) << std::string(28, '\0'); }
  EXPECT_FALSE(CheckWritable(wal).ok());  // a WAL by its header
}

// WriteNewFile (default names) never replaces, and leaves no temporary file when it cannot.
TEST_F(FileIoTest, WriteNewFileNeverReplaces) {
  const std::string p = dir_ + "/default.json";
  bool exists = true;
  ASSERT_TRUE(WriteNewFile(p, "first", &exists).ok());
  EXPECT_FALSE(exists);
  Status again = WriteNewFile(p, "second", &exists);
  EXPECT_FALSE(again.ok());
  EXPECT_TRUE(exists);
  EXPECT_EQ(Slurp(p), "first");
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().rfind(".kstacklab-", 0), std::string::npos) << e.path();
  }
}

TEST_F(FileIoTest, ReadsAreBounded) {
  const std::string p = dir_ + "/big";
  { std::ofstream(p) << std::string(1000, 'x'); }
  EXPECT_TRUE(ReadWholeFile(p, 1000).ok());
  auto r = ReadWholeFile(p, 999);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().exit_code, kExitUsage);
  EXPECT_FALSE(ReadWholeFile(dir_).ok());  // a directory
}

// The kernel's CPU-list format, as sysfs prints it: nothing else is accepted (a sign, a space, an
// empty item, a trailing comma).
TEST(ParseCpuList, CountAndHighest) {
  ASSERT_TRUE(ParseCpuList("0-3,6,8-9").has_value());
  EXPECT_EQ(ParseCpuList("0-3,6,8-9")->count, 7);
  EXPECT_EQ(ParseCpuList("0-3,6,8-9")->highest, 9);
  EXPECT_EQ(ParseCpuList("5")->count, 1);
  EXPECT_EQ(ParseCpuList("5")->highest, 5);
  EXPECT_EQ(ParseCpuList("0-1048575")->count, 1 << 20);
  EXPECT_EQ(CountCpuList("0-1"), 2);
  for (const char* bad : {"", "x", "3-1", "-1", "0-", "0,,1", "0-3 ", "0-2000000", "0;1", "1,",
                          " 1", "+1", "0--1", "0-1048575,1048576"}) {
    EXPECT_EQ(ParseCpuList(bad).has_value(), false) << bad;
    EXPECT_EQ(CountCpuList(bad), std::nullopt) << bad;
  }
}

// The launcher's program lookup: a regular executable file, first on PATH (an empty entry is the
// current directory, as for execvp), or the path given; a directory is not a program.
TEST(Subprocess, FindOnPathFindsRegularExecutablesOnly) {
  const std::string sh = FindOnPath("sh");
  ASSERT_FALSE(sh.empty());
  EXPECT_EQ(fs::path(sh).filename(), "sh");
  EXPECT_TRUE(FindProgram("sh"));
  EXPECT_EQ(FindOnPath(sh), sh);
  EXPECT_EQ(FindOnPath("/no/such/program"), "");
  EXPECT_EQ(FindOnPath(""), "");

  char tmpl[] = "/tmp/kstacklab-path-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  fs::create_directory(dir + "/prog");  // a searchable directory named like the program
  fs::create_directory(dir + "/bin");
  { std::ofstream(dir + "/bin/prog") << "#!/bin/sh\n"; }
  fs::permissions(dir + "/bin/prog", fs::perms::owner_all);
  const char* old = std::getenv("PATH");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("PATH", dir.c_str(), 1);
  EXPECT_EQ(FindOnPath("prog"), "") << "a directory is not a program";
  ::setenv("PATH", (dir + ":" + dir + "/bin").c_str(), 1);
  EXPECT_EQ(FindOnPath("prog"), dir + "/bin/prog");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir + "/bin");
  ::setenv("PATH", (dir + "::/nonexistent").c_str(), 1);
  EXPECT_EQ(FindOnPath("prog"), "./prog") << "an empty PATH entry is the current directory";
  fs::current_path(cwd);
  ::setenv("PATH", saved.c_str(), 1);
  fs::remove_all(dir);
}

// A child killed by the stop flag or the deadline reports how it ended: 128 + SIGKILL.
TEST(Subprocess, RunChildReportsAStoppedOrLateChildAsKilled) {
  ChildSpec spec;
  spec.argv = {"sleep", "30"};
  std::atomic<bool> stop{false};
  std::thread raise([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
  });
  auto stopped = RunChild(spec, 30, &stop);
  raise.join();
  ASSERT_TRUE(stopped.ok()) << stopped.error().message;
  EXPECT_TRUE(stopped->interrupted);
  EXPECT_FALSE(stopped->timed_out);
  EXPECT_EQ(stopped->exit_code, 128 + SIGKILL);
  auto late = RunChild(spec, 0.2);
  ASSERT_TRUE(late.ok());
  EXPECT_TRUE(late->timed_out);
  EXPECT_EQ(late->exit_code, 128 + SIGKILL);
  spec.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
  spec.out = spec.err = ChildStream::Pipe();
  auto done = RunChild(spec, 30);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->exit_code, 3);
  EXPECT_EQ(done->out, "out\n");
  EXPECT_EQ(done->err, "err\n");
  EXPECT_FALSE(done->timed_out || done->interrupted);
}

}  // namespace
}  // namespace kstacklab

namespace kstacklab {
namespace {

// One number grammar: digits, a fraction, an exponent, a sign where the range allows one; never
// hex, spaces, inf or nan (strtod takes them all).
TEST(NumberGrammar, NumbersAreDecimalOnly) {
  for (const char* ok : {"0.05", "5", ".5", "5.", "1e-3", "2E+2", "-3", "1e-320"}) {
    EXPECT_TRUE(ParseNumber(ok, "--x", "0.05").ok()) << ok;
  }
  for (const char* bad : {"0x1p-3", "0x10", " 0.01", "0.01 ", "+1", "inf", "nan", "", ".", "e5",
                          "1e", "1e+", "--1", "1,5", "\t1"}) {
    const auto v = ParseNumber(bad, "--alpha", "0.05");
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.error().message,
              fmt::format("--alpha '{}' is not a number; give e.g. 0.05", EscapeControl(bad)));
  }
  EXPECT_DOUBLE_EQ(*ParseNumber("2E+2", "--x", "1"), 200);
}

TEST(NumberGrammar, DurationsNeedADecimalNumberAndAUnit) {
  EXPECT_DOUBLE_EQ(*ParseDurationNs("10s", "init_timeout", 0, 1e12, "2min"), 10e9);
  EXPECT_DOUBLE_EQ(*ParseDurationNs("1.5min", "init_timeout", 0, 1e12, "2min"), 90e9);
  EXPECT_DOUBLE_EQ(*ParseDurationNs("123456789ns", "x", 0, 1e12, "2min"), 123456789);
  for (const char* bad :
       {"0x10s", " 30s", "30s ", "inf s", "infs", "nans", "-5s", "+5s", "s", "5 s", "0x1p3s"}) {
    const auto v = ParseDurationNs(bad, "init_timeout", 0, 1e12, "2min");
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_NE(v.error().message.find("is not a duration; give a number >= 0 with ns, us, ms, s, "
                                     "min or h, e.g. 2min"),
              std::string::npos)
        << v.error().message;
  }
  const auto bare = ParseDurationNs("30", "init_timeout", 0, 1e12, "2min");
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.error().message, "init_timeout '30' has no unit; give e.g. 30s or 2min");
}

}  // namespace
}  // namespace kstacklab
