# A finished campaign without a guest, for the e2e scripts that test what --resume, --report and
# --fastpath do with a campaign directory: engine lava against the stand-in lavacli
# (tests/e2e/fakes/lavacli runs each job's steps here as the DUT). Source after lib.bash.
# Skips (77) where python3 lacks yaml (the stand-in reads the job file with it).
python3 -c 'import yaml' 2>/dev/null || { echo "skip: python3-yaml is not installed"; exit 77; }
FAKES=$(cd "$(dirname "${BASH_SOURCE[0]}")/fakes" && pwd)
export FAKE_LAVA_DIR=$TMP/lab FAKE_LAVA_KSTACKLAB
FAKE_LAVA_KSTACKLAB=$(readlink -f "$KSTACKLAB")
mkdir -p "$FAKE_LAVA_DIR"

# lava_plan FILE BOOTS PROFILE...: a plan booting each profile BOOTS times through the stand-in.
lava_plan() {
  local file=$1 boots=$2 name; shift 2
  {
    echo "profiles:"
    for name in "$@"; do
      echo "  - {name: $name, kernel: \"https://lab.example/bzImage\", cmdline: \"randomize_kstack_offset=$name\"}"
    done
    echo "run: [--bench, syscall/getpid:raw, --repetitions, \"2\", --iterations, \"200\", --warmup, \"50\"]"
    echo "boots: $boots"
    echo "order: {blocks: fixed, seed: 1}"
    echo "engine: {name: lava, device_type: qemu, lavacli: $FAKES/lavacli}"
  } >"$file"
}

# lava_campaign DIR BOOTS PROFILE...: runs the campaign to its end (exit 0), else the script fails.
lava_campaign() {
  local dir=$1; shift
  lava_plan "$TMP/fixture-plan.yaml" "$@"
  if ! "$KSTACKLAB" campaign "$TMP/fixture-plan.yaml" --no-store --dir "$dir" >"$TMP/fixture.out" 2>&1; then
    echo "FAIL: the fixture campaign in $dir did not finish: $(tail -c 600 "$TMP/fixture.out")"
    exit 1
  fi
}

# edit_state DIR PYTHON: runs PYTHON with `s` the parsed DIR/campaign.json, then writes `s` back.
edit_state() {
  python3 - "$1/campaign.json" "$2" <<'PY'
import json, sys
path, code = sys.argv[1], sys.argv[2]
s = json.load(open(path))
exec(code)
json.dump(s, open(path, "w"), indent=1)
PY
}
