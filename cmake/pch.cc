// The source of kstacklab_pch, the target whose precompiled header every other target reuses
// (src/CMakeLists.txt): it compiles nothing of its own.
