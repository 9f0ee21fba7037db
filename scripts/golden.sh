#!/usr/bin/env bash
# Records what kstacklab prints on fixed inputs, to show that a change of structure changed no
# output. Usage:
#   scripts/golden.sh OUT_DIR [KSTACKLAB_BINARY]    (default binary: build/src/kstacklab)
# Each case writes OUT_DIR/NAME.{out,err,rc}. Record once with the binary before the change and
# once after, then `diff -r BEFORE AFTER`: every difference is a changed output.
#
# Deterministic commands are recorded as they are (show, compare in every format, plan, entropy
# and attack on the models with a seed, list, rng, help texts, the completion scripts and man page,
# `run --internal-validate`, campaign plans read whole by a lava --dry-run and the shorthand's
# refusals, the store's import/export). `run` measures, so for it only the structure is kept: the result file's
# keys, types and strings (numbers, times and the environment's values masked), and the summary
# and messages with every digit replaced by 0 (the layout).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/golden.sh OUT_DIR [KSTACKLAB_BINARY]}
BIN=$(realpath "${2:-build/src/kstacklab}")
D=$(realpath tests/data/compare)
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export XDG_DATA_HOME=$WORK/xdg XDG_STATE_HOME=$WORK/state KSTACKLAB_LOCK_DIR=$WORK/locks
export TZ=UTC LC_ALL=C
cd "$WORK" || exit 1

# case NAME args...: runs kstacklab with args as given.
case_() {
  local name=$1
  shift
  "$BIN" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  echo $? >"$OUT/$name.rc"
}
# masked NAME args...: as case_, keeping only the layout of stdout and stderr: the temporary
# directory named WORK, every number N, runs of spaces, '-' and '=' (column widths) squeezed, and
# no host-stall footnote (which rows it names depends on the times).
masked() {
  case_ "$@"
  mask "$1"
}
mask() {
  local name=$1
  sed -i -e "s|$WORK|WORK|g" -e 's/[0-9][0-9.]*/N/g' -e 's/[ =-][ =-]*/ /g' -e '/^# host stalls/d' \
    "$OUT/$name.out" "$OUT/$name.err"
}
# shape NAME FILE: the structure of a result file (keys, types, strings; numbers masked).
shape() {
  python3 - "$2" >"$OUT/$1.shape" <<'PY'
import json, sys
def number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)
def walk(v, path):
    # arrays of numbers (histogram buckets) vary in length with the times measured
    if isinstance(v, list) and v and all(number(x) or (isinstance(x, list) and all(map(number, x)))
                                         for x in v):
        return "numbers"
    if isinstance(v, dict):
        return {k: walk(x, path + [k]) for k, x in v.items()}
    if isinstance(v, list):
        return [walk(x, path + ["[]"]) for x in v]
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return type(v).__name__
    # strings that depend on the time or the machine
    if path[:1] in (["environment"], ["created"], ["tool_version"]) or path[-1:] == ["source"]:
        return "str"
    return v
d = json.load(open(sys.argv[1]))
print(json.dumps(walk(d, []), indent=1, sort_keys=True))
PY
}

# --- help texts and tables --------------------------------------------------------------------
case_ help --help
for c in run compare plan show list rng entropy attack campaign results plot recover env; do
  case_ "help_$c" "$c" --help
done
case_ completion_bash completion bash
case_ completion_zsh completion zsh
case_ man completion man
# They name the build's commit, which differs between the two binaries compared.
sed -i 's/(commit [0-9a-f]*\(+changes\)\{0,1\},/(commit COMMIT,/' "$OUT"/completion_*.out "$OUT/man.out"
case_ help_bisect bisect --help
case_ list list
case_ list_json list --json

# --- show ---------------------------------------------------------------------------------------
for f in base variants sessions partial_set tiny drift units_us kbase_1; do
  case_ "show_$f" show "$D/$f.json"
done
case_ show_missing show "$D/nope.json"
case_ show_truncated show "$D/truncated.json"

# --- compare ------------------------------------------------------------------------------------
three=("$D/base.json" "$D/plus5.json" "$D/minus5.json")
kruns=("$D"/kbase_{1,2,3}.json "$D"/kplus5_{1,2,3}.json)
for fmt in grid markdown csv json; do
  case_ "compare_three_$fmt" compare "${three[@]}" --format "$fmt"
  case_ "compare_three_${fmt}_verbose" compare "${three[@]}" --format "$fmt" --verbose
  case_ "compare_kruns_$fmt" compare "${kruns[@]}" --format "$fmt"
  case_ "compare_kruns_${fmt}_verbose" compare "${kruns[@]}" --format "$fmt" --verbose
  case_ "compare_variants_$fmt" compare "$D/variants.json" --format "$fmt"
  case_ "compare_mixed4_$fmt" compare "$D/base.json" "$D/tiny.json" "$D/sessions.json" \
    "$D/partial_set.json" --metrics mean --format "$fmt"
  case_ "compare_drift_$fmt" compare "$D/base.json" "$D/drift.json" --metrics mean --format "$fmt"
  case_ "compare_drift_${fmt}_verbose" compare "$D/base.json" "$D/drift.json" --format "$fmt" \
    --verbose
  case_ "compare_driftone_$fmt" compare "$D/drift.json" --format "$fmt"
done
aa=("$D"/aa_a{1,2,3}.json "$D"/aa_b{1,2,3}.json)  # an A/A of 3 + 3 runs, drift in some
case_ compare_aa compare "${aa[@]}"
case_ compare_aa_verbose compare "${aa[@]}" --verbose
case_ compare_aa_json compare "${aa[@]}" --format json
case_ compare_methods compare "$D/variants.json" --method fastpath --test mwu --correct holm \
  --alpha 0.01 --min-effect 1
case_ compare_baseline compare "$D/variants.json" --baseline model:siphash
case_ compare_bench compare "$D/base.json" "$D/plus5.json" --bench 'syscall/getp*id' --metrics mean
case_ compare_allmetrics compare "${kruns[@]}" --metrics mean,stddev,min,p50,p90,p99,p99.9,p99.99,max
# --ab files: the values as columns, each call path a row; two labels: path and value in the row
for fmt in grid csv json; do
  case_ "compare_ab_$fmt" compare "$D/ab_abx.json" --format "$fmt"
  case_ "compare_ab2_$fmt" compare "$D/ab_abx.json" "$D/ab_aby.json" --format "$fmt"
done
case_ compare_ab_bench compare "$D/ab_abx.json" --bench 'syscall/getpid:raw'
case_ compare_ab_baseline compare "$D/ab_abx.json" --baseline kernel.stack_erasing=1
case_ compare_ab_rows2 compare "$D/ab_abx.json" "$D/ab_aby.json" --baseline abx
case_ show_ab show "$D/ab_abx.json"
case_ plan_ab plan "$D/ab_abx.json" --target-effect 2
case_ compare_err_format compare "$D/base.json" --format html
case_ compare_err_metric compare "$D/base.json" --metrics p95
case_ compare_err_alpha compare "$D/base.json" --alpha 2
case_ compare_err_baseline compare "$D/base.json" "$D/plus5.json" --baseline zzz
case_ compare_err_same compare "$D/variants.json" "$D/variants.json"
case_ compare_err_units compare "$D/base.json" "$D/units_us.json"
case_ compare_err_schema compare "$D/base.json" "$D/bad_schema.json"
case_ compare_err_inf compare "$D/base.json" "$D/inf_metric.json"
case_ compare_err_nobench compare "$D/base.json" "$D/plus5.json" --bench 'nosuch/*'

# --- plan ---------------------------------------------------------------------------------------
case_ plan_one plan "$D/base.json" --target-effect 1
case_ plan_three plan "$D"/kbase_{1,2,3}.json --target-effect 2 --cost-run 5min --cost-session 2s
case_ plan_three_md plan "$D"/kbase_{1,2,3}.json --target-effect 2 --format markdown
case_ plan_unreachable plan "$D"/kbase_{1,2,3}.json --target-effect 0.001 --metrics mean
case_ plan_err_target plan "$D/base.json" --target-effect 0
case_ plan_err_cost plan "$D/base.json" --target-effect 1 --cost-run soon
case_ plan_err_format plan "$D/base.json" --target-effect 1 --format html

# --- entropy, attack, rng (models, seeded) --------------------------------------------------------
# (entropy draws from an unseeded generator: its layout only)
masked entropy_two entropy off percpu-prng --samples 5000
masked entropy_json entropy off siphash --samples 5000 --format json
masked entropy_all entropy --samples 2000
case_ entropy_err entropy nosuch
case_ attack_prng attack prng-recover --policy percpu-prng --observations 12 --observations 24 \
  --trials 2 --predict 500
case_ attack_prng_json attack prng-recover --policy percpu-prng --policy siphash \
  --observations 24 --trials 2 --predict 2000 --format json
case_ attack_migration attack migration --syscalls 5000 --seed 3
case_ attack_migration_json attack migration --syscalls 5000 --seed 3 --format json
case_ attack_timer attack timer --resolution-hz 24e6 --resolution-hz 1e9 --jitter-ns 5 \
  --samples 5000
case_ attack_err attack nosuch
case_ rng_prandom rng prandom --seed 1 --count 8
case_ rng_chacha rng chacha20 --count 4 \
  --key 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f \
  --nonce 000000090000004a00000000 --counter 1
case_ rng_crng rng crng-u16 --count 8 \
  --base-key 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
case_ rng_siphash rng siphash --key 000102030405060708090a0b0c0d0e0f --u64 1
case_ rng_err rng prandom --key 00

# --- run --internal-validate (what `campaign` checks before boot 1) ------------------------------
v() { case_ "validate_$1" run --internal-validate --no-store -o "$WORK/v.json" "${@:2}"; }
v ok
v suite --suite syscall --suite model --iterations 1000 --repetitions 5
v bench --bench 'syscall/getpid*' --timing loop --warmup 0
v sessions --sessions 3 --repetitions 10
v ab_model --suite model --ab model:policy=off,percpu-prng
v ab_bad --ab nosuch
v ab_two --ab model:policy=off,percpu-prng --ab model:strategy=generic,rep-stos --suite model --suite erase
v iter0 --iterations 0
v iterneg --iterations -5
v reps_big --repetitions 100001
v reps_sessions --repetitions 60000 --sessions 2
v size --suite model --repetitions 100000
v cpu --cpu 99999
v stall --stall-threshold 5
v stall_ok --stall-threshold 500ns
v label --label $'bad\x01label'
v suite_bad --suite nosuch
v bench_bad --bench 'nosuch/*'
v param --suite micromm --param size=256M
v param_bad --suite micromm --param size=3M
v param_key --param nosuch=1
v timing_bad --timing fast
case_ validate_store run --internal-validate --store "$WORK/v.json" -o "$WORK/v.json"
case_ validate_output run --internal-validate --no-store -o ''

# --- campaign: run arguments checked before boot 1 --------------------------------------------
# (Only arguments both builds refuse: one that passes would boot a guest of this fake image.)
# A file with an x86 boot header: the plan's check reads only the header.
python3 - "$WORK/bzImage" <<'PY'
import sys
img = bytearray(4096)
img[0x1FE:0x200] = b"\x55\xAA"
img[0x202:0x206] = b"HdrS"
img[0x206:0x208] = b"\x00\x02"
open(sys.argv[1], "wb").write(img)
PY
c() { case_ "campaign_$1" campaign --kernel "$WORK/bzImage" --profile a=x --boots 1 --dir "$WORK/c" -- "${@:2}"; }
c reps --repetitions abc
c flag --frobnicate
c list '[x]' --suite nosuch
c empty --suite ''
c size --suite model --repetitions 100000
c sessions --repetitions 60000 --sessions 2

# --- campaign: the plan's fields, from a plan file and from the shorthand -------------------------
# A lava plan with --dry-run is read and checked whole and writes its job files without a boot:
# the first job shows what the plan's fields became.
y() {  # y NAME YAML: the plan file's text, read with --dry-run
  local name=$1
  printf '%b\n' "$2" >"$WORK/$name.yaml"
  case_ "cplan_$name" campaign "$WORK/$name.yaml" --dry-run --dir "$WORK/d_$name"
  local first
  first=$(head -n 1 "$OUT/cplan_$name.out")
  [ -f "$first" ] && cp "$first" "$OUT/cplan_$name.job"
  sed -i "s#$WORK#WORK#g" "$OUT/cplan_$name".*
}
LAVA='engine: {name: lava, device_type: qemu, identity: lab, kstacklab_url: "https://f.example/k"}'
PROF='profiles:\n  - {name: a, kernel: "https://f.example/bz"}\n  - {name: b, kernel: "https://f.example/bz", cmdline: x=1}'
y ok "$PROF\n$LAVA\nboots: 2\nrun: [--suite, syscall]\nstrength: true\nstrength_samples: 2000\norder: {blocks: fixed, seed: 7}"
y target "$PROF\n$LAVA\ntarget: {metric: p99, mdc_pct: 2.5, min_boots: 3, max_boots: 9, budget: 6h}\norder: {blocks: randomized, seed: 1}"
y both "$PROF\n$LAVA\nboots: 2\ntarget: {mdc_pct: 3}"
y neither "$PROF\n$LAVA"
y boots0 "$PROF\n$LAVA\nboots: 0"
y boots_word "$PROF\n$LAVA\nboots: many"
y nomdc "$PROF\n$LAVA\ntarget: {max_boots: 9}"
y mdc_big "$PROF\n$LAVA\ntarget: {mdc_pct: 1001}"
y mdc_word "$PROF\n$LAVA\ntarget: {mdc_pct: lots}"
y minb "$PROF\n$LAVA\ntarget: {mdc_pct: 3, min_boots: 1}"
y budget_bad "$PROF\n$LAVA\ntarget: {mdc_pct: 3, budget: soon}"
y target_key "$PROF\n$LAVA\ntarget: {mdc_pct: 3, mdc: 2}"
y metric "$PROF\n$LAVA\ntarget: {mdc_pct: 3, metric: p42}"
y order_bad "$PROF\n$LAVA\nboots: 2\norder: {blocks: shuffled}"
y order_key "$PROF\n$LAVA\nboots: 2\norder: {blocks: fixed, sede: 1}"
y seed_bad "$PROF\n$LAVA\nboots: 2\norder: {seed: -1}"
y strength_bad "$PROF\n$LAVA\nboots: 2\nstrength: yes"
y samples_bad "$PROF\n$LAVA\nboots: 2\nstrength_samples: 10"
y run_bad "$PROF\n$LAVA\nboots: 2\nrun: --suite"
y top_key "$PROF\n$LAVA\nboots: 2\nbootz: 2"
y kstacklab_lava "$PROF\n$LAVA\nboots: 2\nkstacklab: ./k"
s() { case_ "short_$1" campaign --kernel "$WORK/bzImage" --profile a=x --profile b=y --dir "$WORK/s" "${@:2}"; }
s none
s both --boots 2 --target-mdc 3
s boots_bad --boots 0
s mdc_big --target-mdc 1001
s mdc_word --target-mdc lots
s max_bad --target-mdc 3 --max-boots 1
s budget_bad --target-mdc 3 --budget soon
s order_bad --boots 2 --order shuffled
s seed_bad --boots 2 --seed x
s cpus_bad --boots 2 --cpus 0
s accel_bad --boots 2 --accel fast
s timeout_bad --boots 2 --boot-timeout 1s
s metric --target-mdc 3 --target-metric p42
s dry --boots 2 --dry-run
case_ short_noprofile campaign --kernel "$WORK/bzImage" --boots 2 --dir "$WORK/s"
case_ short_nokernel campaign --boots 2 --dir "$WORK/s"
for f in "$OUT"/short_*; do sed -i "s#$WORK#WORK#g" "$f"; done

# --- the store (import, export) --------------------------------------------------------------------
case_ store_import results import --store "$WORK/s.db" "$D/base.json" "$D/variants.json"
case_ store_list_n results list --store "$WORK/s.db"
sed -i 's/[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9][T ][0-9:]*Z\?/TIME/g' "$OUT/store_list_n.out"
case_ store_export results export 2 --store "$WORK/s.db" -o -
case_ store_show show 1 --store "$WORK/s.db"

# --- run (measures: structure and layout only) -------------------------------------------------------
small=(--iterations 2000 --repetitions 3 --warmup 100 --no-store)
masked run_plain run --bench 'syscall/getpid*' "${small[@]}" --label g -o "$WORK/r1.json"
shape run_plain "$WORK/r1.json"
masked run_loop run --bench syscall/getppid --timing loop "${small[@]}" --label g -o "$WORK/r2.json"
shape run_loop "$WORK/r2.json"
masked run_sessions run --bench syscall/getpid:raw --sessions 2 "${small[@]}" --label g \
  -o "$WORK/r3.json"
shape run_sessions "$WORK/r3.json"
masked run_ab_model run --suite model --bench 'model/kstack(handler:empty)*' \
  --ab model:policy=off,percpu-prng "${small[@]}" --label g -o "$WORK/r4.json"
shape run_ab_model "$WORK/r4.json"
mkdir -p "$WORK/sys/kernel" && echo 1 >"$WORK/sys/kernel/stack_erasing"
KSTACKLAB_SYSCTL_ROOT=$WORK/sys KSTACKLAB_RECOVERY_FILE=$WORK/recovery \
  masked run_ab_sysctl run --bench syscall/getpid:raw --ab sysctl:kernel.stack_erasing=0,1 \
  "${small[@]}" --label g -o "$WORK/r5.json"
shape run_ab_sysctl "$WORK/r5.json"
cp "$WORK/sys/kernel/stack_erasing" "$OUT/run_ab_sysctl.restored"
case_ run_stdout run --bench syscall/getpid:raw "${small[@]}" --label g -o -
shape run_stdout "$OUT/run_stdout.out"
echo "the result document: run_stdout.shape" >"$OUT/run_stdout.out"
mask run_stdout
masked run_err_cpu run --bench syscall/getpid:raw "${small[@]}" --cpu 1000 -o "$WORK/r6.json"
masked run_err_ab run --bench syscall/getpid:raw "${small[@]}" --ab nosuch -o "$WORK/r6.json"
KSTACKLAB_SYSCTL_ROOT=$WORK/sys KSTACKLAB_RECOVERY_FILE=$WORK/recovery \
  masked run_err_sysctl run --bench syscall/getpid:raw --ab sysctl:kernel.nosuch=0,1 \
  "${small[@]}" -o "$WORK/r6.json"
masked run_store run --bench syscall/getpid:raw --iterations 2000 --repetitions 3 --warmup 100 \
  --store "$WORK/run.db" --label g -o "$WORK/r7.json"
shape run_store "$WORK/r7.json"
# the temporary directory's and the binary's names are not outputs
grep -rlF "$WORK" "$OUT" | xargs -r sed -i "s|$WORK|WORK|g"
grep -rlF "$BIN" "$OUT" | xargs -r sed -i "s|$BIN|kstacklab|g"
echo "recorded $(find "$OUT" -name '*.rc' | wc -l) cases in $OUT"
