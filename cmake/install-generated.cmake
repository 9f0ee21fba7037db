# Part of `cmake --install` (and of the Debian package, which CPack installs the same way): the man
# page and the shell completion that building the kstacklab target generated
# (cmake/generate-docs.cmake). Set by the install(CODE) before this script: KSTACKLAB_GENERATED_DIR,
# KSTACKLAB_MANDIR and KSTACKLAB_DATADIR (relative to the prefix).
foreach(name IN ITEMS kstacklab.1 kstacklab _kstacklab)
  if(NOT EXISTS "${KSTACKLAB_GENERATED_DIR}/${name}")
    message(FATAL_ERROR "${KSTACKLAB_GENERATED_DIR}/${name} does not exist: build the kstacklab "
                        "target first (cmake --build BUILD --target kstacklab), then install")
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
