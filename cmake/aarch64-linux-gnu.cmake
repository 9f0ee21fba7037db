# Cross build for aarch64 (arm64) on an x86-64 Debian 12 host: `cmake --preset aarch64`
# (docs/arm64.md). Needs what scripts/install-deps.sh --all installs on x86-64: the cross compiler
# (crossbuild-essential-arm64), qemu-user-static (the tests run under qemu-aarch64), Debian's
# :arm64 libraries, and the two arm64 development packages Debian cannot install beside the
# amd64 ones, unpacked by scripts/arm64-dev-cache.sh.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(_kstacklab_cache "$ENV{XDG_CACHE_HOME}/kstacklab/arm64-dev")
else()
  set(_kstacklab_cache "$ENV{HOME}/.cache/kstacklab/arm64-dev")
endif()
file(GLOB _kstacklab_dev_roots LIST_DIRECTORIES true "${_kstacklab_cache}/libpq-dev_*"
     "${_kstacklab_cache}/libyaml-cpp-dev_*")
list(LENGTH _kstacklab_dev_roots _kstacklab_dev_count)
if(_kstacklab_dev_count LESS 2)
  message(FATAL_ERROR "no arm64 libpq-dev/libyaml-cpp-dev under ${_kstacklab_cache}: run scripts/install-deps.sh --all (it runs scripts/arm64-dev-cache.sh)")
endif()

# Libraries, headers and CMake packages: the unpacked packages, then the host's :arm64 ones
# (/usr/lib/aarch64-linux-gnu) and the architecture-independent headers (/usr/include: CLI11,
# nlohmann/json, Boost.Math). Programs (python3, bash, ...) are the host's.
set(CMAKE_FIND_ROOT_PATH ${_kstacklab_dev_roots} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config reads the arm64 .pc files only (never the host's x86_64 ones).
set(_kstacklab_pc "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
foreach(root IN LISTS _kstacklab_dev_roots)
  string(PREPEND _kstacklab_pc "${root}/usr/lib/aarch64-linux-gnu/pkgconfig:")
endforeach()
set(ENV{PKG_CONFIG_LIBDIR} "${_kstacklab_pc}")
set(ENV{PKG_CONFIG_PATH} "")

# ctest and the build's own runs of the binary (the man page) go through qemu-user. No -L: the
# arm64 dynamic loader (/lib/ld-linux-aarch64.so.1) and every library the binary links are
# installed as Debian :arm64 packages (multiarch, /usr/lib/aarch64-linux-gnu), so the host's tree
# serves as the guest's. (-L /usr/aarch64-linux-gnu would also redirect "/" itself, and the
# tool's checks that open a directory from "/" downwards would fail.)
find_program(KSTACKLAB_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(NOT KSTACKLAB_QEMU_AARCH64)
  message(FATAL_ERROR "no qemu-aarch64: apt-get install qemu-user-static (scripts/install-deps.sh --all installs it)")
endif()
if(NOT EXISTS /lib/ld-linux-aarch64.so.1)
  message(FATAL_ERROR "no arm64 dynamic loader (/lib/ld-linux-aarch64.so.1): apt-get install libc6:arm64 (scripts/install-deps.sh --all installs the :arm64 libraries)")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${KSTACKLAB_QEMU_AARCH64})
