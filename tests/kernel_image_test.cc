// campaign/ kernel_image and arch: every image format of the table from synthesised headers
// (x86-64 bzImage, arm64 Image, arm64 Image.gz compressed here with zlib), the banner read across
// chunk boundaries, and each kind of file refused with what it is (truncated, RISC-V, PE, ELF
// vmlinux, random bytes, empty, a directory, a FIFO); the ELF machine of a kstacklab binary; the
// plan's checks of architectures and of the kstacklab binary; its `kstacklab` key stored and read
// back. Debian's own arm64 kernel, where scripts/debian-kernel.sh --arch arm64 has fetched it.
#include "kstacklab/campaign/kernel_image.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "kstacklab/campaign/arch.h"
#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/engines.h"
#include "kstacklab/campaign/lava.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/campaign/qemu.h"
#include "kstacklab/campaign/ssh.h"
#include "kstacklab/common/error.h"
#include "kstacklab/results/json.h"
#include "test_support.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

class TempDir : public testing_support::TempDir {
 public:
  TempDir() : testing_support::TempDir("kstacklab-image-test") {}
};

void Write(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

void PutLe(std::string& b, size_t off, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) b[off + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// Documentation/arch/x86/boot.rst: boot_flag, "HdrS", protocol 2.00, the version string at
// 0x200 + kernel_version.
std::string BzImage(const std::string& version) {
  std::string img(4096, '\0');
  PutLe(img, 0x1FE, 0xAA55, 2);
  img.replace(0x202, 4, "HdrS");
  PutLe(img, 0x206, 0x0200, 2);
  if (!version.empty()) {
    PutLe(img, 0x20E, 0x400, 2);
    img.replace(0x600, version.size(), version);
  }
  return img;
}

// Documentation/arch/arm64/booting.rst: a 64-byte header ("MZ" in code0 for the EFI stub,
// text_offset, image_size, flags, magic "ARM\x64" at 0x38, the PE header's offset at 0x3C), a PE
// header with one section whose raw data ends at `declared` (0: no PE header), and the banner at
// `banner_at` (npos: none) in an image of `size` bytes.
std::string Arm64Image(size_t size, size_t banner_at, uint64_t declared = 0,
                       const std::string& release = "6.1.0-57-arm64", uint32_t magic = 0x644d5241) {
  std::string img(size, '\0');
  img[0] = 'M';
  img[1] = 'Z';
  PutLe(img, 8, 0, 8);           // text_offset
  PutLe(img, 16, 0x2010000, 8);  // image_size (memory, more than the file)
  PutLe(img, 24, 0xA, 8);        // flags: LE, 4K pages, anywhere
  PutLe(img, 0x38, magic, 4);
  if (declared != 0) {
    PutLe(img, 0x3C, 0x40, 4);
    img.replace(0x40, 4, std::string("PE\0\0", 4));
    PutLe(img, 0x44, 0xAA64, 2);  // Machine: ARM64
    PutLe(img, 0x46, 1, 2);       // NumberOfSections
    PutLe(img, 0x54, 0xA0, 2);    // SizeOfOptionalHeader
    const size_t section = 0x40 + 24 + 0xA0;
    img.replace(section, 5, ".text");
    PutLe(img, section + 16, declared - 0x1000, 4);  // SizeOfRawData
    PutLe(img, section + 20, 0x1000, 4);             // PointerToRawData
  }
  if (banner_at != std::string::npos) {
    const std::string banner = "Linux version " + release + " (debian-kernel@lists.debian.org) #1";
    img.replace(banner_at, banner.size(), banner);
  }
  return img;
}

std::string Gzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A minimal ELF header: class, data, e_machine.
std::string Elf(int elf_class, int data, uint16_t machine) {
  std::string h(64, '\0');
  h.replace(0, 4,
            "\x7f"
            "ELF");
  h[4] = static_cast<char>(elf_class);
  h[5] = static_cast<char>(data);
  h[6] = 1;
  PutLe(h, 16, 2, 2);  // ET_EXEC
  if (data == 2) {
    h[18] = static_cast<char>(machine >> 8);
    h[19] = static_cast<char>(machine & 0xFF);
  } else {
    PutLe(h, 18, machine, 2);
  }
  return h;
}

std::string Refusal(const std::string& path) {
  auto k = ReadKernelImage(path);
  EXPECT_FALSE(k.ok()) << path << " was read as " << (k.ok() ? k->format : "");
  if (k.ok()) return "";
  EXPECT_EQ(k.error().exit_code, kExitUsage);
  EXPECT_EQ(k.error().message.find('\n'), std::string::npos) << "not one line";
  EXPECT_NE(k.error().message.find(path), std::string::npos) << "does not name the image";
  return k.error().message;
}

// ---- formats
// -------------------------------------------------------------------------------------

TEST(KernelImage, EveryArchitectureOfTheTableHasAFormatAndEveryFormatAnArchitecture) {
  for (const ImageFormat& f : ImageFormats()) {
    EXPECT_NE(FindArchitecture(f.arch), nullptr) << f.name;
  }
  for (const Architecture& a : Architectures()) {
    bool has = false;
    for (const ImageFormat& f : ImageFormats()) has |= std::string(f.arch) == a.name;
    EXPECT_TRUE(has) << a.name << " has no image format";
  }
  EXPECT_EQ(ImageFormatNames(), "an x86-64 bzImage, an arm64 Image or an arm64 Image.gz");
}

TEST(KernelImage, ABzImageIsX86WithTheReleaseOfItsSetupHeader) {
  TempDir t;
  Write(t.path() + "/a", BzImage("6.18.0-rc1+ (me@host) #7"));
  Write(t.path() + "/b", BzImage(""));
  auto a = ReadKernelImage(t.path() + "/a");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_STREQ(a->arch->name, "x86_64");
  EXPECT_EQ(a->format, "bzImage");
  EXPECT_EQ(a->release, "6.18.0-rc1+");
  auto b = ReadKernelImage(t.path() + "/b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->release, "") << "no version string: no release";
}

TEST(KernelImage, AnArm64ImageIsAarch64WithTheReleaseOfItsBanner) {
  TempDir t;
  Write(t.path() + "/Image", Arm64Image(1 << 20, 700000, 1 << 20));
  auto k = ReadKernelImage(t.path() + "/Image");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_STREQ(k->arch->name, "aarch64");
  EXPECT_EQ(k->format, "Image");
  EXPECT_EQ(k->release, "6.1.0-57-arm64");
}

TEST(KernelImage, TheBannerIsFoundAcrossTheBoundaryOfTwoReads) {
  TempDir t;
  // The file is read 1 MiB at a time: banners cut at each place near the boundary.
  for (size_t back : {1, 5, 14, 20, 30}) {
    Write(t.path() + "/Image", Arm64Image(3 << 20, (1 << 20) - back));
    auto k = ReadKernelImage(t.path() + "/Image");
    ASSERT_TRUE(k.ok()) << back << ": " << k.error().message;
    EXPECT_EQ(k->release, "6.1.0-57-arm64") << back;
  }
  // At the very end of the file, with nothing after the release but the rest of the banner.
  std::string img = Arm64Image(4096, std::string::npos);
  img += "Linux version 6.6.0-arm64 (x)";
  Write(t.path() + "/Image", img);
  auto k = ReadKernelImage(t.path() + "/Image");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->release, "6.6.0-arm64");
}

TEST(KernelImage, AFormatStringIsNotABanner) {
  EXPECT_EQ(BannerRelease("Linux version %s (%s) #1"), "");
  EXPECT_EQ(BannerRelease("Linux version 6.1.0-57-arm64 (debian)"), "6.1.0-57-arm64");
  EXPECT_EQ(BannerRelease("Linux version 6.1"), "") << "cut: no space after the word";
  EXPECT_EQ(BannerRelease("Linux version " + std::string(65, '6') + " x"), "");
  EXPECT_EQ(BannerRelease("Linux Version 6.1 x"), "");
  TempDir t;
  std::string img = Arm64Image(1 << 16, 10000, 0, "%s");
  const std::string real = "Linux version 6.12.9-arm64 (x) #1";
  img.replace(40000, real.size(), real);
  Write(t.path() + "/Image", img);
  auto k = ReadKernelImage(t.path() + "/Image");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->release, "6.12.9-arm64") << "the banner after a format string";
}

TEST(KernelImage, AGzipCompressedArm64ImageIsReadByInflatingItsStart) {
  TempDir t;
  Write(t.path() + "/Image.gz", Gzip(Arm64Image(2 << 20, 1500000, 2 << 20)));
  auto k = ReadKernelImage(t.path() + "/Image.gz");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_STREQ(k->arch->name, "aarch64");
  EXPECT_EQ(k->format, "Image.gz");
  EXPECT_EQ(k->release, "6.1.0-57-arm64");
}

TEST(KernelImage, OnlyTheStartOfAnImageGzIsInflated) {
  TempDir t;
  // The banner early, then damage: an image read past its banner would report the damage.
  std::string gz = Gzip(Arm64Image(4 << 20, 1000, 0) + std::string(1, 'x'));
  std::string damaged = gz.substr(0, gz.size() / 2) + std::string(4096, '\xff');
  Write(t.path() + "/Image.gz", damaged);
  auto k = ReadKernelImage(t.path() + "/Image.gz");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->release, "6.1.0-57-arm64");
}

// ---- refusals
// ------------------------------------------------------------------------------------

TEST(KernelImage, ATruncatedImageIsRefusedWithBothSizes) {
  TempDir t;
  const std::string whole = Arm64Image(1 << 20, 700000, 1 << 20);
  Write(t.path() + "/Image", whole.substr(0, 8192));
  const std::string m = Refusal(t.path() + "/Image");
  EXPECT_NE(m.find("arm64 Image cut short: 8192 bytes of the 1048576"), std::string::npos) << m;
  // Without a PE header: no banner in what is left.
  Write(t.path() + "/Image", Arm64Image(1 << 20, 700000).substr(0, 8192));
  const std::string m2 = Refusal(t.path() + "/Image");
  EXPECT_NE(m2.find("without a 'Linux version' banner"), std::string::npos) << m2;
  // An Image.gz cut before its banner.
  const std::string gz = Gzip(Arm64Image(2 << 20, 1900000, 0));
  Write(t.path() + "/Image.gz", gz.substr(0, gz.size() / 4));
  const std::string m3 = Refusal(t.path() + "/Image.gz");
  EXPECT_NE(m3.find("cut short"), std::string::npos) << m3;
}

TEST(KernelImage, ABigEndianArm64ImageAndADamagedImageSizeAreRefused) {
  TempDir t;
  std::string be = Arm64Image(1 << 16, 1000);
  PutLe(be, 24, 0xB, 8);  // flags bit 0: big-endian
  Write(t.path() + "/be", be);
  const std::string m = Refusal(t.path() + "/be");
  EXPECT_NE(m.find("is a big-endian arm64 Image (flags bit 0 of its header)"), std::string::npos)
      << m;
  Write(t.path() + "/be.gz", Gzip(be));
  const std::string gz = Refusal(t.path() + "/be.gz");
  EXPECT_NE(gz.find("is a big-endian arm64 Image"), std::string::npos) << gz;
  std::string huge = Arm64Image(1 << 16, 1000);
  PutLe(huge, 16, uint64_t{1} << 40, 8);  // image_size 1 TiB
  Write(t.path() + "/huge", huge);
  const std::string h = Refusal(t.path() + "/huge");
  EXPECT_NE(h.find("declares an image_size of 1099511627776 bytes"), std::string::npos) << h;
  EXPECT_NE(h.find("copy the image again"), std::string::npos) << h;
  // A real image declares more than its file (BSS): accepted.
  Write(t.path() + "/ok", Arm64Image(1 << 16, 1000));
  EXPECT_TRUE(ReadKernelImage(t.path() + "/ok").ok());
}

TEST(KernelImage, ARiscvImageIsNamedAndRefused) {
  TempDir t;
  Write(t.path() + "/riscv", Arm64Image(1 << 16, 1000, 0, "6.1.0-riscv64", 0x05435352));
  const std::string m = Refusal(t.path() + "/riscv");
  EXPECT_NE(m.find("RISC-V kernel Image"), std::string::npos) << m;
  Write(t.path() + "/riscv.gz", Gzip(Arm64Image(1 << 16, 1000, 0, "6.1.0-riscv64", 0x05435352)));
  const std::string gz = Refusal(t.path() + "/riscv.gz");
  EXPECT_NE(gz.find("gzip-compressed RISC-V"), std::string::npos) << gz;
}

TEST(KernelImage, APeFileOfNoRowAnElfVmlinuxAndRandomBytesAreEachNamed) {
  TempDir t;
  std::string pe(4096, '\0');
  pe.replace(0, 2, "MZ");
  PutLe(pe, 0x3C, 0x80, 4);
  pe.replace(0x80, 4, std::string("PE\0\0", 4));
  Write(t.path() + "/efi", pe);
  EXPECT_NE(Refusal(t.path() + "/efi").find("PE/EFI file but neither"), std::string::npos);
  std::string zboot = pe;  // drivers/firmware/efi/libstub/zboot-header.S
  zboot.replace(4, 4, "zimg");
  zboot.replace(24, 4, "zstd");
  Write(t.path() + "/zboot.efi", zboot);
  const std::string z = Refusal(t.path() + "/zboot.efi");
  EXPECT_NE(z.find("is an EFI zboot image (CONFIG_EFI_ZBOOT: a zstd-compressed kernel"),
            std::string::npos)
      << z;
  Write(t.path() + "/vmlinux", Elf(2, 1, 62) + std::string(4096, '\0'));
  const std::string elf = Refusal(t.path() + "/vmlinux");
  EXPECT_NE(elf.find("ELF file (a vmlinux?)"), std::string::npos) << elf;
  EXPECT_NE(elf.find("give the bootable one"), std::string::npos) << elf;
  std::mt19937_64 rng(7);
  std::string noise(65536, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  noise[0] = 'Q';  // not by chance a gzip or PE start
  Write(t.path() + "/noise", noise);
  const std::string r = Refusal(t.path() + "/noise");
  EXPECT_NE(r.find("is not a kernel image kstacklab knows (it starts 51"), std::string::npos) << r;
  Write(t.path() + "/text.gz", Gzip(std::string(200, 'a')));
  EXPECT_NE(Refusal(t.path() + "/text.gz").find("holds no arm64 Image"), std::string::npos);
  Write(t.path() + "/bad.gz", "\x1f\x8b\x08" + std::string(200, '\xee'));
  EXPECT_NE(Refusal(t.path() + "/bad.gz").find("damaged"), std::string::npos);
}

TEST(KernelImage, EmptyFilesDirectoriesFifosAndMissingFilesAreRefusedWithoutWaiting) {
  TempDir t;
  Write(t.path() + "/empty", "");
  EXPECT_NE(Refusal(t.path() + "/empty").find("is empty"), std::string::npos);
  EXPECT_NE(Refusal(t.path()).find("not a regular file"), std::string::npos);
  ASSERT_EQ(::mkfifo((t.path() + "/fifo").c_str(), 0600), 0);
  EXPECT_NE(Refusal(t.path() + "/fifo").find("not a regular file"), std::string::npos);
  EXPECT_NE(Refusal(t.path() + "/none").find("No such file"), std::string::npos);
}

// ---- the binary's architecture ------------------------------------------------------------------

TEST(ElfArchitecture, ReadsX86AndArm64AndNamesEverythingElse) {
  TempDir t;
  const std::string p = t.path() + "/k";
  Write(p, Elf(2, 1, 62));
  EXPECT_STREQ((*ElfArchitecture(p, "kstacklab"))->name, "x86_64");
  Write(p, Elf(2, 1, 183));
  EXPECT_STREQ((*ElfArchitecture(p, "kstacklab"))->name, "aarch64");
  auto refused = [&](const std::string& bytes) {
    Write(p, bytes);
    auto a = ElfArchitecture(p, "kstacklab");
    EXPECT_FALSE(a.ok());
    return a.ok() ? std::string() : a.error().message;
  };
  EXPECT_NE(refused(Elf(2, 1, 243)).find("for riscv (e_machine 243)"), std::string::npos);
  EXPECT_NE(refused(Elf(1, 1, 3)).find("32-bit"), std::string::npos);
  EXPECT_NE(refused(Elf(2, 2, 21)).find("big-endian"), std::string::npos);
  EXPECT_NE(refused("#!/bin/sh\nexec kstacklab \"$@\"\n").find("not an ELF"), std::string::npos);
  EXPECT_NE(refused("").find("empty"), std::string::npos);
  EXPECT_FALSE(ElfArchitecture(t.path() + "/none", "kstacklab").ok());
  EXPECT_FALSE(ElfArchitecture(t.path(), "kstacklab").ok());
  // This very test binary is of the architecture it was built for.
  auto self = ElfArchitecture("/proc/self/exe", "kstacklab");
  ASSERT_TRUE(self.ok()) << self.error().message;
  EXPECT_EQ(*self, &HostArchitecture());
}

// ---- the plan
// ------------------------------------------------------------------------------------

struct PlanFiles {
  TempDir t;
  std::string bz = t.path() + "/bzImage";
  std::string image = t.path() + "/Image";
  std::string arm_bin = t.path() + "/kstacklab-aarch64";
  std::string x86_bin = t.path() + "/kstacklab-x86_64";
  PlanFiles() {
    Write(bz, BzImage("6.1.0-57-amd64 (x) #1"));
    Write(image, Arm64Image(1 << 16, 1000, 1 << 16));
    Write(arm_bin, Elf(2, 1, 183));
    Write(x86_bin, Elf(2, 1, 62));
  }
  CampaignPlan Plan(const std::string& a, const std::string& b) const {
    CampaignPlan p;
    p.boots = 1;
    p.profiles = {{"a", a}, {"b", b}};
    return p;
  }
};

const Architecture& OtherArchitecture() {
  return *FindArchitecture(std::string(HostArchitecture().name) == "x86_64" ? "aarch64" : "x86_64");
}

std::string Checked(CampaignPlan& plan) {
  Status st = CheckPlan(plan);
  if (st.ok()) return "";
  EXPECT_EQ(st.error().exit_code, kExitUsage);
  EXPECT_EQ(st.error().message.find('\n'), std::string::npos);
  return st.error().message;
}

CampaignPlan OnSsh(CampaignPlan plan) {
  plan.engine = PlanEngine(**FindEngine("ssh"));
  SettingsOf<SshSettings>(plan).host = "sut.example";
  return plan;
}

TEST(CampaignArchitecture, EveryProfileGetsItsImagesArchitectureAndRelease) {
  PlanFiles f;
  CampaignPlan plan = OnSsh(f.Plan(f.image, f.image));
  plan.kstacklab = f.arm_bin;
  ASSERT_EQ(Checked(plan), "");
  for (const Profile& p : plan.profiles) {
    EXPECT_EQ(p.arch, "aarch64");
    EXPECT_EQ(p.release, "6.1.0-57-arm64");
  }
  CampaignPlan x86 = f.Plan(f.bz, f.bz);
  x86.kstacklab = f.x86_bin;
  ASSERT_EQ(Checked(x86), "");
  EXPECT_EQ(x86.profiles[1].arch, "x86_64");
}

TEST(CampaignArchitecture, ACampaignOfTwoArchitecturesIsRefusedNamingBothImages) {
  PlanFiles f;
  CampaignPlan plan = OnSsh(f.Plan(f.bz, f.image));
  plan.kstacklab = f.x86_bin;
  const std::string m = Checked(plan);
  EXPECT_NE(m.find(fmt::format("profile 'a' kernel '{}' is x86_64 but profile 'b' kernel '{}' is "
                               "aarch64",
                               f.bz, f.image)),
            std::string::npos)
      << m;
}

TEST(CampaignArchitecture, AKstacklabOfAnotherArchitectureIsRefusedNamingBoth) {
  PlanFiles f;
  CampaignPlan plan = OnSsh(f.Plan(f.image, f.image));
  plan.kstacklab = f.x86_bin;
  const std::string m = Checked(plan);
  EXPECT_NE(m.find(fmt::format("kstacklab '{}' is built for x86_64 but profile 'a' kernel '{}' is "
                               "aarch64",
                               f.x86_bin, f.image)),
            std::string::npos)
      << m;
  plan.kstacklab = f.t.path() + "/no-such-kstacklab";
  EXPECT_NE(Checked(plan).find("no-such-kstacklab': No such file"), std::string::npos);
  plan.kstacklab = f.bz;
  EXPECT_NE(Checked(plan).find("not an ELF executable"), std::string::npos);
  // Without one, this program runs there: refused where the images are of the other architecture.
  CampaignPlan other =
      OnSsh(std::string(HostArchitecture().name) == "x86_64" ? f.Plan(f.image, f.image)
                                                             : f.Plan(f.bz, f.bz));
  const std::string d = Checked(other);
  EXPECT_NE(d.find(fmt::format("but this kstacklab is built for {}", HostArchitecture().name)),
            std::string::npos)
      << d;
  EXPECT_NE(d.find(fmt::format("name a kstacklab built for {}", OtherArchitecture().name)),
            std::string::npos)
      << d;
}

TEST(CampaignArchitecture, APlansArchMustBeItsImagesAndKnown) {
  PlanFiles f;
  CampaignPlan plan = OnSsh(f.Plan(f.image, f.image));
  plan.kstacklab = f.arm_bin;
  plan.profiles[0].arch = "x86_64";
  EXPECT_NE(Checked(plan).find("arch 'x86_64' is not its image's"), std::string::npos);
  plan.profiles[0].arch = "riscv64";
  EXPECT_NE(Checked(plan).find("arch 'riscv64' is unknown; give x86_64 or aarch64"),
            std::string::npos);
}

TEST(CampaignArchitecture, TheQemuEngineTakesArm64ImagesOnVirtWithABusyboxOfTheirs) {
  PlanFiles f;
  CampaignPlan plan = f.Plan(f.image, f.image);
  plan.kstacklab = f.arm_bin;
  EXPECT_EQ(Checked(plan), "") << "the plan of arm64 images passes the plan checks";
  // The engine's own check: a busybox of another architecture than the kernels' is refused.
  if (std::string(HostArchitecture().name) == "x86_64" && IsStaticElf("/bin/busybox")) {
    SettingsOf<QemuSettings>(plan).busybox = "/bin/busybox";
    SettingsOf<QemuSettings>(plan).binary = "true";
    SettingsOf<QemuSettings>(plan).accel = "tcg";
    const Status st = MakeEngine(plan, f.t.path(), f.arm_bin)->Check();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("engine busybox '/bin/busybox' is built for x86_64 but the "
                                      "kernels are aarch64"),
              std::string::npos)
        << st.error().message;
  }
}

TEST(CampaignArchitecture, LavaWritesArm64JobsForAnAarch64Profile) {
  CampaignPlan plan;
  plan.boots = 1;
  plan.engine = PlanEngine(**FindEngine("lava"));
  plan.profiles = {{"on", "https://lab.example/Image.gz"}};
  plan.profiles[0].arch = "aarch64";
  plan.profiles[0].cmdline = "randomize_kstack_offset=on";
  ASSERT_EQ(Checked(plan), "");
  const std::string job = LavaJobYaml(plan, plan.profiles[0], 1);
  EXPECT_NE(job.find("arch: arm64"), std::string::npos) << job;
  EXPECT_NE(job.find("machine: virt"), std::string::npos) << job;
  EXPECT_NE(job.find("cpu: max"), std::string::npos) << job;
  EXPECT_NE(job.find("-append \"console=ttyAMA0,115200 randomize_kstack_offset=on\""),
            std::string::npos)
      << job;
  // A bootloader device type boots it with booti: `type: image`, inflated by LAVA.
  SettingsOf<LavaSettings>(plan).device_type = "juno";
  const std::string boards = LavaJobYaml(plan, plan.profiles[0], 1);
  EXPECT_NE(boards.find("type: image"), std::string::npos) << boards;
  EXPECT_NE(boards.find("compression: gz"), std::string::npos) << boards;
  // Without an arch the profile is x86_64, as before.
  SettingsOf<LavaSettings>(plan).device_type = "qemu";
  plan.profiles[0].arch.clear();
  ASSERT_EQ(Checked(plan), "");
  EXPECT_EQ(plan.profiles[0].arch, "x86_64");
  const std::string x86 = LavaJobYaml(plan, plan.profiles[0], 1);
  EXPECT_NE(x86.find("arch: amd64"), std::string::npos) << x86;
  EXPECT_EQ(x86.find("machine:"), std::string::npos) << x86;
  EXPECT_NE(x86.find("console=ttyS0,115200"), std::string::npos) << x86;
  // Its DUT downloads kstacklab: a local binary is refused.
  plan.kstacklab = "/usr/bin/true";
  EXPECT_NE(Checked(plan).find("engine lava runs the kstacklab its DUT downloads"),
            std::string::npos);
}

TEST(CampaignArchitecture, TheKstacklabKeyIsReadStoredAndReadBack) {
  PlanFiles f;
  Write(f.t.path() + "/plan.yaml", "");
  auto plan = ParsePlanYaml(fmt::format("profiles:\n  - {{name: a, kernel: Image, arch: aarch64}}\n"
                                        "boots: 1\nkstacklab: kstacklab-aarch64\n"
                                        "engine: {{name: ssh, host: sut.example}}\n"),
                            "plan.yaml", f.t.path());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->kstacklab, f.arm_bin) << "relative to the plan file's directory";
  ASSERT_EQ(Checked(*plan), "");
  const Json j = PlanToJson(*plan);
  EXPECT_EQ(j.at("kstacklab"), f.arm_bin);
  EXPECT_EQ(j.at("profiles")[0].at("arch"), "aarch64");
  auto back = PlanFromJson(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->kstacklab, f.arm_bin);
  EXPECT_EQ(back->profiles[0].arch, "aarch64");
  EXPECT_EQ(GuestBinary(*back, "/self"), f.arm_bin);
  // A state written before the key: this program, and the architecture read again.
  Json old = j;
  old.erase("kstacklab");
  old["profiles"][0].erase("arch");
  auto before = PlanFromJson(old);
  ASSERT_TRUE(before.ok()) << before.error().message;
  EXPECT_EQ(before->kstacklab, "");
  EXPECT_EQ(GuestBinary(*before, "/self"), "/self");
  EXPECT_EQ(before->profiles[0].arch, "");
  Json bad = j;
  bad["kstacklab"] = 7;
  EXPECT_FALSE(PlanFromJson(bad).ok());
}

// ---- Debian's own arm64 kernel
// --------------------------------------------------------------------

// scripts/debian-kernel.sh --arch arm64 leaves it in the cache; the test says so and skips when
// it has not been fetched (CI fetches it: the e2e bad-input script runs the script first).
TEST(KernelImage, DebiansArm64KernelIsAnUncompressedImageWithItsRelease) {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path dir = cache != nullptr
                           ? fs::path(cache) / "kstacklab/qemu-arm64"
                           : fs::path(home != nullptr ? home : "/") / ".cache/kstacklab/qemu-arm64";
  std::error_code ec;
  std::string path;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind("vmlinuz-", 0) == 0) path = e.path().string();
  }
  if (path.empty())
    GTEST_SKIP() << "no Debian arm64 kernel in " << dir
                 << " (scripts/debian-kernel.sh --arch arm64)";
  auto k = ReadKernelImage(path);
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_STREQ(k->arch->name, "aarch64");
  EXPECT_EQ(k->format, "Image") << "Debian 12 ships its arm64 kernel uncompressed";
  EXPECT_EQ("vmlinuz-" + k->release, fs::path(path).filename().string());
}

}  // namespace
}  // namespace kstacklab::campaign
