# kstacklab --version stands alone: anything after it is a usage error (exit 2, one line), not
# ignored; alone it prints the version and exits 0.
. "$(dirname "$0")/lib.bash"
K=$KSTACKLAB
expect_exit 0 "--version alone" -- "$K" --version
expect_stdout "^kstacklab " "--version prints the version"
for extra in extra --bogus run; do
  expect_exit 2 "--version $extra" -- "$K" --version "$extra"
  expect_stderr "--version takes no other argument" "--version $extra: says why"
  [ "$(grep -c . "$TMP/err")" -eq 1 ] || fail "--version $extra: more than one line on stderr"
  [ -s "$TMP/out" ] && fail "--version $extra printed: $(cat "$TMP/out")" || pass "--version $extra prints nothing"
done
finish
