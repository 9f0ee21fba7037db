# Part of `cmake --install` (and of the Debian package, which CPack installs the same way): the
# man page and the shell completion, printed by the kstacklab binary being installed from its own
# command-line definitions (`kstacklab completion man|bash|zsh`), so they cannot drift from it.
# Set by the install(CODE) before this script: KSTACKLAB_BIN, KSTACKLAB_GENERATED_DIR,
# KSTACKLAB_MANDIR and KSTACKLAB_DATADIR (relative to the prefix).
file(MAKE_DIRECTORY "${KSTACKLAB_GENERATED_DIR}")
foreach(what IN ITEMS man bash zsh)
  set(out "${KSTACKLAB_GENERATED_DIR}/${what}")
  if(what STREQUAL "man")
    set(out "${KSTACKLAB_GENERATED_DIR}/kstacklab.1")
  elseif(what STREQUAL "bash")
    set(out "${KSTACKLAB_GENERATED_DIR}/kstacklab")
  else()
    set(out "${KSTACKLAB_GENERATED_DIR}/_kstacklab")
  endif()
  execute_process(COMMAND "${KSTACKLAB_BIN}" completion ${what} OUTPUT_FILE "${out}"
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "`${KSTACKLAB_BIN} completion ${what}` failed (${rc}): ${err}")
  endif()
endforeach()
# zsh reads Debian's packages' completions from vendor-completions, a local install's from
# site-functions; bash-completion reads both prefixes' completions directories.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(zsh_dir "${KSTACKLAB_DATADIR}/zsh/vendor-completions")
else()
  set(zsh_dir "${KSTACKLAB_DATADIR}/zsh/site-functions")
endif()
file(INSTALL "${KSTACKLAB_GENERATED_DIR}/kstacklab.1"
     DESTINATION "${CMAKE_INSTALL_PREFIX}/${KSTACKLAB_MANDIR}/man1")
file(INSTALL "${KSTACKLAB_GENERATED_DIR}/kstacklab"
     DESTINATION "${CMAKE_INSTALL_PREFIX}/${KSTACKLAB_DATADIR}/bash-completion/completions")
file(INSTALL "${KSTACKLAB_GENERATED_DIR}/_kstacklab"
     DESTINATION "${CMAKE_INSTALL_PREFIX}/${zsh_dir}")
