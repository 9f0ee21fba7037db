// The kernel image formats by architecture (kernel_image.h): one row per format, and the kinds of
// file that are refused with what they are.
#include "kstacklab/campaign/kernel_image.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "kstacklab/common/text.h"

namespace kstacklab::campaign {
namespace {

uint64_t Le(std::string_view b, size_t off, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = bytes; i > 0; --i) v = (v << 8) | static_cast<uint8_t>(b[off + i - 1]);
  return v;
}

std::string Who(const ImageBytes& image) {
  return fmt::format("kernel image '{}'", EscapeControl(std::string(image.path)));
}

constexpr std::string_view kBanner = "Linux version ";

// Finds the first "Linux version RELEASE " in a stream of chunks (a banner may straddle two).
class BannerScanner {
 public:
  // True once the banner is found (then release() holds it).
  bool Feed(std::string_view chunk) {
    // Enough of the previous chunk to hold a banner cut at the boundary.
    static constexpr size_t kKeep = kBanner.size() + 80;
    window_.append(chunk.data(), chunk.size());
    for (size_t at = window_.find(kBanner); at != std::string::npos;
         at = window_.find(kBanner, at + 1)) {
      if (window_.size() - at < kKeep && !last_) break;  // its word may go on in the next chunk
      release_ = BannerRelease(std::string_view(window_).substr(at));
      if (!release_.empty()) return true;
    }
    if (window_.size() > kKeep) window_.erase(0, window_.size() - kKeep);
    return false;
  }
  // The stream ended: a banner in the last bytes is complete.
  bool Finish() {
    last_ = true;
    return Feed({});
  }
  const std::string& release() const { return release_; }

 private:
  std::string window_;
  std::string release_;
  bool last_ = false;
};

// ---- x86-64 bzImage (Documentation/arch/x86/boot.rst) -----------------------------------------

// boot_flag 0xAA55 at 0x1FE, "HdrS" at 0x202, the protocol version at 0x206; from 2.00 the
// kernel_version pointer at 0x20E (a string at that value + 0x200, "6.1.0-57-amd64 (...) #1").
// Its payload is compressed, so there is no banner to fall back on: no string gives "".
Expected<std::optional<KernelImage>> ReadBzImage(const ImageBytes& image) {
  const std::string_view h = image.head;
  if (h.size() < 0x210 || Le(h, 0x1FE, 2) != 0xAA55 || h.substr(0x202, 4) != "HdrS") {
    return std::optional<KernelImage>();
  }
  KernelImage k{FindArchitecture("x86_64"), "bzImage", ""};
  if (Le(h, 0x206, 2) < 0x0200 || Le(h, 0x20E, 2) == 0) return std::optional(k);
  const size_t off = Le(h, 0x20E, 2) + 0x200;
  for (size_t i = off; i < h.size() && i < off + 256; ++i) {
    const auto c = static_cast<unsigned char>(h[i]);
    if (c == '\0' || c == ' ') break;
    if (c < 0x21 || c > 0x7e) {
      k.release.clear();
      break;
    }
    k.release += static_cast<char>(c);
  }
  return std::optional(k);
}

// ---- arm64 Image (Documentation/arch/arm64/booting.rst) ---------------------------------------

// The 64-byte header: code0/code1, text_offset at 8, image_size at 16, flags at 24, magic
// "ARM\x64" (0x644d5241 little endian) at 0x38, the PE header's offset at 0x3C (an EFI stub).
constexpr uint32_t kArm64Magic = 0x644d5241;
constexpr uint32_t kRiscvMagic = 0x05435352;  // "RSC\x05" at 0x38: a RISC-V Image's magic2

bool HasArm64Magic(std::string_view h) { return h.size() >= 64 && Le(h, 0x38, 4) == kArm64Magic; }

// The most memory an arm64 kernel's image_size (its text, data and BSS) plausibly takes: Debian
// 12's 6.1 Image declares 33.6 MB for a 33.0 MB file; a value past this is a damaged header.
constexpr uint64_t kMaxArm64ImageSize = uint64_t{1} << 30;

// What the header of an arm64 Image (`h`: its first 64 bytes, the magic checked) says that
// kstacklab cannot boot, as the rest of a sentence after the image's name; "" when nothing.
std::string Arm64HeaderProblem(std::string_view h) {
  // flags bit 0: the kernel's endianness, 1 = big-endian (booting.rst). QEMU's virt machine runs
  // it, but the guest's busybox and kstacklab are little-endian builds.
  if ((Le(h, 24, 8) & 1) != 0) {
    return "is a big-endian arm64 Image (flags bit 0 of its header); kstacklab boots "
           "little-endian arm64 kernels: give a build without CONFIG_CPU_BIG_ENDIAN";
  }
  const uint64_t image_size = Le(h, 16, 8);
  if (image_size > kMaxArm64ImageSize) {
    return fmt::format(
        "is an arm64 Image whose header declares an image_size of {} bytes, more than any "
        "kernel takes ({} at most): the header is damaged; copy the image again",
        image_size, kMaxArm64ImageSize);
  }
  return "";
}

// The bytes the image's PE section table says it has (the end of the last section's raw data), 0
// without a PE header in `h`.
uint64_t PeDeclaredBytes(std::string_view h) {
  const uint64_t pe = Le(h, 0x3C, 4);
  if (pe == 0 || pe + 24 > h.size() || h.substr(pe, 4) != std::string_view("PE\0\0", 4)) return 0;
  const uint64_t sections = Le(h, pe + 6, 2);
  const uint64_t table = pe + 24 + Le(h, pe + 20, 2);
  uint64_t end = 0;
  for (uint64_t i = 0; i < sections && table + 40 * (i + 1) <= h.size(); ++i) {
    const uint64_t s = table + 40 * i;
    end = std::max(end, Le(h, s + 20, 4) + Le(h, s + 16, 4));  // PointerToRawData + SizeOfRawData
  }
  return end;
}

Expected<std::optional<KernelImage>> ReadArm64Image(const ImageBytes& image) {
  if (!HasArm64Magic(image.head)) return std::optional<KernelImage>();
  if (const std::string problem = Arm64HeaderProblem(image.head); !problem.empty()) {
    return UsageError(fmt::format("{} {}", Who(image), problem));
  }
  const uint64_t declared = PeDeclaredBytes(image.head);
  if (declared > image.size) {
    return UsageError(fmt::format(
        "{} is an arm64 Image cut short: {} bytes of the {} its PE header declares; copy it again",
        Who(image), image.size, declared));
  }
  BannerScanner banner;
  uint64_t seen = 0;
  bool found = false;
  KSTACKLAB_RETURN_IF_ERROR(image.stream([&](std::string_view chunk) {
    seen += chunk.size();
    found = banner.Feed(chunk);
    return !found && seen < kMaxImageScanBytes;
  }));
  if (!found) found = banner.Finish();
  if (!found) {
    return UsageError(fmt::format(
        "{} is an arm64 Image without a 'Linux version' banner in its first {} bytes (cut short?); "
        "give the whole arch/arm64/boot/Image",
        Who(image), std::min(seen, image.size)));
  }
  return std::optional(KernelImage{FindArchitecture("aarch64"), "Image", banner.release()});
}

// ---- arm64 Image.gz: the Image, gzip-compressed (RFC 1952) ------------------------------------

// Inflates until the banner is found: the Image header is checked on the first 64 bytes out, and
// at most kMaxImageScanBytes come out.
class GzipImage {
 public:
  explicit GzipImage(const ImageBytes& image) : image_(image) {}

  Expected<std::optional<KernelImage>> Read() {
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) return RuntimeError("zlib: inflateInit2 failed");
    Status streamed = image_.stream([this](std::string_view chunk) { return Inflate(chunk); });
    inflateEnd(&z_);
    KSTACKLAB_RETURN_IF_ERROR(streamed);
    if (!problem_.empty()) return UsageError(fmt::format("{} {}", Who(image_), problem_));
    if (!found_) found_ = banner_.Finish();
    if (!found_ && head_.size() < 64) {
      return UsageError(fmt::format("{} is gzip-compressed but holds {} bytes only: no kernel",
                                    Who(image_), head_.size()));
    }
    if (!found_ && !ended_) {
      return UsageError(fmt::format(
          "{} is a gzip-compressed arm64 Image cut short: its gzip stream ends after {} bytes "
          "without the 'Linux version' banner; copy it again",
          Who(image_), out_));
    }
    if (!found_) {
      return UsageError(fmt::format(
          "{} is a gzip-compressed arm64 Image without a 'Linux version' banner in its first {} "
          "bytes; give the whole arch/arm64/boot/Image.gz",
          Who(image_), out_));
    }
    return std::optional(KernelImage{FindArchitecture("aarch64"), "Image.gz", banner_.release()});
  }

 private:
  // One chunk of the file; false to stop.
  bool Inflate(std::string_view chunk) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
    z_.avail_in = static_cast<uInt>(chunk.size());
    // Until this chunk is used up and zlib holds no more output for a full buffer.
    do {
      z_.next_out = reinterpret_cast<Bytef*>(buf_.data());
      z_.avail_out = static_cast<uInt>(buf_.size());
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        problem_ = fmt::format("is gzip-compressed but damaged ({}); copy it again",
                               z_.msg != nullptr ? z_.msg : "zlib error");
        return false;
      }
      const size_t got = buf_.size() - z_.avail_out;
      if (!Out(std::string_view(buf_.data(), got))) return false;
      if (rc == Z_STREAM_END) {
        ended_ = true;
        return false;
      }
      if (rc == Z_BUF_ERROR && got == 0) break;
    } while (z_.avail_in > 0 || z_.avail_out == 0);
    return true;
  }

  // Decompressed bytes; false to stop.
  bool Out(std::string_view data) {
    out_ += data.size();
    if (head_.size() < 64) {
      head_.append(data.substr(0, 64 - head_.size()));
      if (head_.size() == 64 && !HasArm64Magic(head_)) {
        problem_ =
            Le(head_, 0x38, 4) == kRiscvMagic
                ? "is a gzip-compressed RISC-V kernel Image; kstacklab boots " + ImageFormatNames()
                : "is gzip-compressed but holds no arm64 Image (no ARM\\x64 magic at "
                  "0x38); give an x86-64 bzImage, an arm64 Image or Image.gz";
        return false;
      }
      if (head_.size() == 64) {
        problem_ = Arm64HeaderProblem(head_);
        if (!problem_.empty()) return false;
      }
    }
    found_ = banner_.Feed(data);
    return !found_ && out_ < kMaxImageScanBytes;
  }

  const ImageBytes& image_;
  z_stream z_{};
  std::vector<char> buf_ = std::vector<char>(size_t{256} * 1024);
  std::string head_;
  BannerScanner banner_;
  uint64_t out_ = 0;
  bool found_ = false;
  bool ended_ = false;
  std::string problem_;
};

Expected<std::optional<KernelImage>> ReadArm64ImageGz(const ImageBytes& image) {
  const std::string_view h = image.head;
  if (h.size() < 3 || h.substr(0, 3) != "\x1f\x8b\x08") return std::optional<KernelImage>();
  return GzipImage(image).Read();
}

// ---- what is refused, and how it is named ------------------------------------------------------

std::string FirstBytes(std::string_view h) {
  std::string out;
  for (size_t i = 0; i < h.size() && i < 8; ++i) {
    out += fmt::format("{}{:02x}", i == 0 ? "" : " ", static_cast<uint8_t>(h[i]));
  }
  return out;
}

// The one line for a file no row reads.
std::string Unrecognised(const ImageBytes& image) {
  const std::string_view h = image.head;
  const std::string give = "give " + ImageFormatNames() + " (e.g. /boot/vmlinuz-*)";
  if (image.size == 0) return fmt::format("{} is empty; {}", Who(image), give);
  if (h.substr(0, 4) ==
      "\x7f"
      "ELF") {
    return fmt::format(
        "{} is an ELF file (a vmlinux?), not a bootable image; give the bootable one: "
        "arch/x86/boot/bzImage, arch/arm64/boot/Image or Image.gz, or /boot/vmlinuz-*",
        Who(image));
  }
  if (h.size() >= 64 && Le(h, 0x38, 4) == kRiscvMagic) {
    return fmt::format("{} is a RISC-V kernel Image (riscv64), which kstacklab does not boot; {}",
                       Who(image), give);
  }
  // drivers/firmware/efi/libstub/zboot-header.S: "MZ", "zimg" at 4, the payload's compression
  // as a string at 24 ("gzip", "zstd").
  if (h.size() >= 32 && h.substr(0, 2) == "MZ" && h.substr(4, 4) == "zimg") {
    std::string comp;
    for (size_t i = 24; i < 32 && h[i] >= 'a' && h[i] <= 'z'; ++i) comp += h[i];
    return fmt::format(
        "{} is an EFI zboot image (CONFIG_EFI_ZBOOT: a {}-compressed kernel inside a PE file), "
        "which kstacklab does not read; give the kernel build's arch/arm64/boot/Image or Image.gz",
        Who(image), comp.empty() ? "compressed" : comp);
  }
  if (h.substr(0, 2) == "MZ") {
    return fmt::format(
        "{} is a PE/EFI file but neither an x86 bzImage (no setup header) nor an arm64 Image (no "
        "ARM\\x64 magic); {}",
        Who(image), give);
  }
  return fmt::format("{} is not a kernel image kstacklab knows (it starts {}); {}", Who(image),
                     FirstBytes(h), give);
}

class ImageFile {
 public:
  explicit ImageFile(int fd) : fd_(fd) {}
  ~ImageFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  ImageFile(const ImageFile&) = delete;
  ImageFile& operator=(const ImageFile&) = delete;
  int fd() const { return fd_; }

  Status Stream(const std::function<bool(std::string_view)>& chunk) const {
    std::vector<char> buf(size_t{1} << 20);
    for (off_t at = 0;;) {
      const ssize_t n = ::pread(fd_, buf.data(), buf.size(), at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return RuntimeError(fmt::format("cannot read: {}", std::strerror(errno)));
      if (n == 0 || !chunk(std::string_view(buf.data(), static_cast<size_t>(n)))) break;
      at += n;
    }
    return OkStatus();
  }

 private:
  int fd_;
};

}  // namespace

std::span<const ImageFormat> ImageFormats() {
  static constexpr std::array<ImageFormat, 3> kFormats = {{
      {"bzImage", "x86_64", "x86 boot protocol image (setup header \"HdrS\"): /boot/vmlinuz-*",
       &ReadBzImage},
      {"Image", "aarch64", "arm64 Image (header magic ARM\\x64 at 0x38), as Debian ships it",
       &ReadArm64Image},
      {"Image.gz", "aarch64", "arm64 Image, gzip-compressed (as Fedora and others ship it)",
       &ReadArm64ImageGz},
  }};
  return kFormats;
}

std::string ImageFormatNames() {
  std::string out;
  const auto rows = ImageFormats();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) out += i + 1 == rows.size() ? " or " : ", ";
    out += fmt::format("an {} {}", FindArchitecture(rows[i].arch)->summary, rows[i].name);
  }
  return out;
}

std::string BannerRelease(std::string_view text) {
  if (text.substr(0, kBanner.size()) != kBanner) return "";
  text.remove_prefix(kBanner.size());
  std::string release;
  for (char c : text) {
    if (c == ' ') break;
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) return "";
    release += c;
    if (release.size() > 64) return "";
  }
  // A format string ("Linux version %s") or a sentence is not a release: it starts with a digit.
  if (release.empty() || release[0] < '0' || release[0] > '9' || release.size() == text.size()) {
    return "";
  }
  return release;
}

Expected<KernelImage> ReadKernelImage(const std::string& path) {
  const std::string who = fmt::format("kernel image '{}'", EscapeControl(path));
  // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer (then refused by fstat).
  ImageFile file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (file.fd() < 0) {
    return UsageError(
        fmt::format("{}: {}; give an existing kernel image", who, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(file.fd(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return UsageError(fmt::format("{} is not a regular file; give a kernel image file", who));
  }
  std::string head(kImageHeadBytes, '\0');
  const ssize_t n = ::pread(file.fd(), head.data(), head.size(), 0);
  if (n < 0) return UsageError(fmt::format("{}: {}", who, std::strerror(errno)));
  head.resize(static_cast<size_t>(n));
  ImageBytes image{
      path, head, static_cast<uint64_t>(st.st_size),
      [&file](const std::function<bool(std::string_view)>& chunk) { return file.Stream(chunk); }};
  for (const ImageFormat& row : ImageFormats()) {
    std::optional<KernelImage> k;
    KSTACKLAB_ASSIGN_OR_RETURN(k, row.read(image));
    if (k) return std::move(*k);
  }
  return UsageError(Unrecognised(image));
}

}  // namespace kstacklab::campaign
