// Whole-file I/O with the guarantees the CLI promises: reads report the path and errno text;
// a regular file is replaced atomically (temp file in the same directory + fsync + rename), so a
// reader never sees a half-written file and an interrupted write leaves the old file (or nothing)
// in place. Special files (device nodes, FIFOs, sockets, /proc/self/fd/N) are written through and
// never replaced. Library code: messages name paths, never a command-line flag.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "kstacklab/common/error.h"

namespace kstacklab {

// Reads a whole file of at most `max_bytes`. Missing/unreadable/too large -> UsageError naming
// the path (the user gave it).
// The user's home directory: $HOME, else the passwd entry of the real uid, else "/". (Never the
// current directory: a store or recovery file there would be found only from that directory.)
std::string HomeDir();

Expected<std::string> ReadWholeFile(const std::string& path, size_t max_bytes = SIZE_MAX);

// Reads `fd` to its end (at most `max_bytes`; more -> UsageError naming `what`). A read
// interrupted by a signal calls `on_interrupt` (if any), then continues. The one read loop.
Expected<std::string> ReadAll(int fd, size_t max_bytes, const std::string& what,
                              const std::function<void()>& on_interrupt = nullptr);

// Reads an input file that must be a regular file of at most `max_bytes`: opened with
// O_NONBLOCK (a FIFO or a device in its place is refused at once, never waited on), then
// fstat'ed. Anything else, missing, unreadable or too large -> UsageError naming the path. For
// every file a command takes as input by name (plans, states, programs it copies, result files
// it was given a directory of).
Expected<std::string> ReadRegularFile(const std::string& path, size_t max_bytes);

// Reads all of standard input (at most `max_bytes`; more -> UsageError).
Expected<std::string> ReadStdin(size_t max_bytes = SIZE_MAX);

// Writes `content` to `path`; "-" writes to stdout.
//  * a regular file (or a symlink to one: the target is replaced, the link kept) is replaced
//    atomically; an existing file keeps its permission bits, a new one gets 0666 & ~umask;
//  * anything else that exists (a device node such as /dev/null, a FIFO, a socket, a
//    /proc/self/fd/N link to a pipe or terminal) is opened and written through, never replaced.
// Every symbolic link on the way (a directory component, each link of a chain) is followed one
// component at a time (openat, O_NOFOLLOW) and must pass the sticky-directory rule
// (CheckSymlinkOwner); a dangling link's target is created through the link; a loop (more than
// 40 links) is refused. A write-protected file (no write bit for us, as root too, or one open
// for writing refuses: immutable, EACCES) and another user's file in a sticky, world-writable
// directory are refused, not replaced.
// On failure (ENOSPC, EFBIG included) -> RuntimeError naming the path; nothing is left behind.
Status WriteFileAtomic(const std::string& path, const std::string& content);

// As WriteFileAtomic, but never replaces anything: when `path` exists (or appears before the
// final rename, which is renameat2(RENAME_NOREPLACE)) -> RuntimeError with `*exists` set, so
// the caller can pick another name. Not for "-" or special files. For default output names.
Status WriteNewFile(const std::string& path, const std::string& content, bool* exists = nullptr);

// Writes `text` to stdout and flushes; a short write or failed flush (EPIPE, ENOSPC on
// /dev/full) -> RuntimeError. The one checked stdout writer every command uses.
Status WriteStdout(std::string_view text);

// The kernel's fs.protected_symlinks rule, applied whatever that sysctl says, to every symbolic
// link `path` passes through (each directory component, each link of a chain): a link in a
// sticky, world-writable directory (/tmp) is followed only if this user or the directory's
// owner made it; else UsageError naming the link's owner. A link loop (ELOOP) -> UsageError.
// No link -> Ok. Used by
// every writer of a user-named path (result files, images, the results store), so another user
// cannot point /tmp/out.json at a file of ours and have a run replace it.
Status CheckSymlinkOwner(const std::string& path);

// True when both paths exist and are the same file (device and inode, symlinks followed).
bool SameFile(const std::string& a, const std::string& b);

// Checks, before any measurement, that WriteFileAtomic(path, ...) can succeed: the path is not
// empty, does not end in '/', is not a directory, its directory exists and is writable (a probe
// file is created and removed; nothing is left behind), an existing special file is writable
// (a socket never is), an existing regular file can be opened for writing and is not
// write-protected or another user's in a shared directory, it is no SQLite database or side
// file of one (NAME-wal, NAME-shm, NAME-journal), and every link passes CheckSymlinkOwner. Every
// failure is a UsageError naming the fix (the path given is the problem; nothing has been done
// yet). A descriptor path
// (/dev/stdout, /proc/self/fd/N) must be open for writing.
// "-" is always writable.
Status CheckWritable(const std::string& path);

}  // namespace kstacklab
