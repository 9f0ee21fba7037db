# Part of building the kstacklab target (a POST_BUILD step, src/CMakeLists.txt): the man page and
# the bash and zsh completion, printed by the binary just linked from its own command-line
# definitions (`kstacklab completion man|bash|zsh`), so they cannot drift from it. Each file is
# replaced only when its text changed. Set by the caller: KSTACKLAB_BIN, OUT_DIR, and in a cross
# build KSTACKLAB_EMULATOR (CMAKE_CROSSCOMPILING_EMULATOR: qemu-aarch64 and its arguments).
separate_arguments(emulator UNIX_COMMAND "${KSTACKLAB_EMULATOR}")
file(MAKE_DIRECTORY "${OUT_DIR}")
foreach(what IN ITEMS man bash zsh)
  if(what STREQUAL "man")
    set(name kstacklab.1)
  elseif(what STREQUAL "bash")
    set(name kstacklab)
  else()
    set(name _kstacklab)
  endif()
  execute_process(COMMAND ${emulator} "${KSTACKLAB_BIN}" completion ${what} OUTPUT_FILE "${OUT_DIR}/${name}.new"
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    file(REMOVE "${OUT_DIR}/${name}.new")
    message(FATAL_ERROR "`${KSTACKLAB_BIN} completion ${what}` failed (${rc}): ${err}")
  endif()
  file(COPY_FILE "${OUT_DIR}/${name}.new" "${OUT_DIR}/${name}" ONLY_IF_DIFFERENT)
  file(REMOVE "${OUT_DIR}/${name}.new")
endforeach()
