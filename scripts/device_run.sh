#!/usr/bin/env bash
# One call on the GPU machine (the device tool), from the repository root:
#   installs the carried wheels (.whl/, ignored by git) that its image lacks,
#   records the machine and versions, runs the test suite (GPU tests included)
#   and the benchmarks, and leaves logs and JSON under $OUT.
# dnnc runs from the source tree; nothing is installed into the image's Python.
# Steps (arguments, in order; default: all): tests gpu-tests bench
#   tests      the whole suite (CPU and GPU tests), junit XML
#   gpu-tests  only the tests marked gpu, $GPU_TEST_WORKERS (1) at a time (extra pytest args
#              via $PYTEST_ARGS, split at spaces: name tests by node id, not by a -k expression
#              with spaces)
#   gpu-smoke  the gpu tests of what changes most (the executor and its backends, artifacts,
#              the partitioner's contest, specs, user kernels, the small models): a few
#              minutes, so a break shows before the whole suite runs
#   gpu-rest   the gpu tests that neither gpu-smoke nor zoo-gpu runs (with both: the whole
#              GPU suite, in three calls that each fit the device's per-call limit)
#   zoo-gpu    the zoo's and its families' gpu tests, $ZOO_TEST_WORKERS (1) at a time
#              ($PYTEST_ARGS picks, e.g. "tests/zoo -k convnext")
#   One at a time because compiles sharing the GPU slow each other down many times over:
#   autotuning times every plan and config on the GPU, and each timing waits for the other
#   processes' work (efficientnet_b0's zoo test: 31 s alone on an H200, 310 s four at a
#   time on an H100; BENCHMARKS.md, "Whole compiles"). Each test worker gets
#   cores / workers Triton compile processes.
#   Test steps write each outcome to $OUT/live.jsonl as it ends (scripts/pytest_live.py).
#   bench      the benchmarks (compiler speed, cuDNN block + ResNet-50, Triton bandwidth)
#   compile-time  cold and warm whole compiles and the artifact's load, the cold one profiled
#              (bench/compile_time.py; $COMPILE_TIMM: timm models at 64x64, batch 2, set empty
#              for none; $COMPILE_WORKLOADS: bench workloads; $COMPILE_POLICIES: auto,greedy;
#              $COMPILE_PROFILE=1 profiles the cold compiles; $COMPILE_NAME goes into the file names)
#   compile-table  cold and warm compile and run time per model under dnnc auto, greedy and
#              torch.compile, each in fresh processes (bench/compile_table.py; $TABLE_WORKLOADS
#              picks, default one per model; $TABLE_VARIANTS picks variants; $TABLE_WARM names
#              those compiled warm too, default all; $TABLE_DEADLINE_S starts no workload after
#              that many seconds; $TABLE_NAME goes into the file name)
#   tuning-times  every Triton config and cuDNN plan tuning times in cold compiles of
#              $TUNING_WORKLOADS (default unet2d-b8,convnext_tiny-b32), and what timing fewer
#              would keep (bench/tuning_times.py; $TUNING_NAME goes into the file name)
#   export-time  torch.export of $EXPORT_WORKLOADS (default resnet50-b32,unet2d-b8) in fresh
#              processes, on the CPU and the GPU, with and without the compile workers starting
#              (bench/export_time.py; $EXPORT_PROFILE=1 profiles each first export)
#   compile-spread  cold compiles of $SPREAD_WORKLOADS (default mobilenetv3_large_100-b1), $SPREAD_COMPILES
#              (3) each in fresh processes with empty caches, each artifact loaded and timed in two more
#              (bench/compile_spread.py: do compiles of one code land on one program?)
#   timing-probe  device_time_ms on kernels of microseconds against each replay timed alone (bench/timing_probe.py)
#   call-overhead  a compiled program's call, piece by piece on the host ($OVERHEAD_WORKLOADS,
#              default conv-block-b1; bench/call_overhead.py)
#   ncu-kernels  Nsight Compute's counters of every kernel of one call ($NCU_WORKLOADS, default
#              resnet50-b32; compiled and saved first, then loaded under ncu; bench/ncu_kernels.py):
#              $OUT/ncu-<workload>.csv and .json; $NCU_SET (e.g. full) adds that section set
#              (warp stalls, memory and pipe workloads) to the three sections read by default
#   step-profile  each step's GPU time inside the built program, and the compile's expensive
#              calls ($PROFILE_WORKLOADS, default resnet50-b1; $PROFILE_ARGS, e.g. --peer-kernels --own-kernels;
#              bench/compile_profile.py); with $AB_SIDES, each side's tree in turn (as in ab), under
#              $OUT/profile-<side>
#   buckets    one model compiled for a range of sizes against per-size compiles and torch.compile
#              (dynamic=True, reduce-overhead) ($BUCKET_WORKLOADS: resnet50 bert-batch bert-seq;
#              $BUCKET_VARIANTS picks; bench/buckets.py)
#   cold-load  an artifact loaded in fresh processes with empty caches, with its stored Triton
#              kernels and without them ($COLD_LOAD_WORKLOADS; bench/cold_load.py)
#   cross-target  each workload built in a process that sees no GPU (dnnc compile --target), against
#              the one compiled here: checked, timed, and loaded cold ($CROSS_WORKLOADS;
#              bench/cross_target.py)
#   serve-prepare  ResNet-50 compiled for batch 1..32 and saved for serving, timed called directly
#              and through the served model's call path without a server (bench/serve_bench.py)
#   serve      that artifact served by `dnnc serve`'s deployment on Ray Serve, and torch.compile
#              served the same way, under load ($SERVE_GPUS replicas, one per GPU); installs the
#              wheels of .whl-serve/ (Ray Serve's, carried in a call of their own: together with
#              .whl/ they pass the carry limit; scripts/trim_ray_wheel.py cuts Ray's wheel down;
#              $SERVE_VARIANTS: dnnc,torch.compile; $SERVE_NAME goes into the file name)
#   suite      bench/run.py: the workloads of $SUITE_WORKLOADS (default all) against the peers users pick
#              for latency ($SUITE_VARIANTS, default eager in one CUDA graph, torch.compile reduce-overhead,
#              JAX/XLA) and dnnc ($SUITE_POLICIES, default auto, with its bound replay); all 30 take
#              longer than one call: split them and merge the JSON (bench/run.py --merge);
#              SUITE_VARIANTS=compile-max,... adds torch.compile max-autotune (up to 5 minutes of
#              compile a workload: one or two workloads a call)
#   suite-gpus  the suite split over the machine's GPUs at once (suite-pair: the same), $SUITE_WORKLOADS_<g>
#              on GPU g, each with its share of the cores; JSON and log under $OUT/gpu<g> (four GPUs: the
#              whole suite in one call); $SUITE_QUIET: workloads bound by the host, run after
#              them on GPU 0 alone (under $OUT/quiet)
#   ab         the same workloads compiled cold (`auto`) by other trees and by this one, each
#              workload by all in turn so they share the machine's state: $AB_WORKLOADS (comma-
#              separated); $AB_SIDES (default "before after"): "after" is this tree, any other
#              name a tree in .ab-<name>/ (scripts/ab_tree.sh REV [NAME] makes it; name it in the
#              call's carry); $AB_TIMEOUT_S a compile (default 110); JSON and log per side under
#              $OUT/ab ($AB_NAME goes into the file names)
#   pack       everything under $OUT in one $OUT/out.tgz (the device hands back at most 8 files):
#              the last step of a call that writes more
#   setup      nothing but the above (wheels, bytecode, versions): what lanes' commands need
#   lanes      $LANE_<g> (a shell command) on GPU g, all GPUs at once; logs and files under $OUT/gpu<g>
#   zoo-bench  the zoo workloads against PyTorch eager, eager in a CUDA graph and
#              torch.compile (reduce-overhead), dnnc with its defaults ($ZOO_WORKLOADS picks)
# Fill .whl/ once on a machine with network access:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#     -d .whl xdsl==0.74.0 'immutabledict<4.3.2' ordered-set==4.1 filecheck==1.0.6 lit==23.1.5 \
#     nvidia-cudnn-frontend==1.32.0 diffusers==0.42.1 importlib_metadata platformdirs cuda-bindings cuda-pathfinder
set -uo pipefail
OUT=${OUT:-/tmp/dnnc-device-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

if [ -z "${DNNC_DEVICE_READY:-}" ] && compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
[ -d /tmp/site ] && case ":$PYTHONPATH:" in *:/tmp/site:*) ;; *) export PYTHONPATH="$PYTHONPATH:/tmp/site" ;; esac

# The image ships its packages without bytecode and sets PYTHONDONTWRITEBYTECODE, so every
# fresh process compiled torch's, sympy's and Triton's modules from source again: 3.5 s of a
# first torch.export, 7 s beside the compile workers (H200 host, bench/export_time.py), which
# no pip-installed machine pays. Bytecode goes under a writable prefix, compiled once here.
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/pycache}
unset PYTHONDONTWRITEBYTECODE
SECONDS=0
[ -n "${DNNC_DEVICE_READY:-}" ] || python3 -m compileall -q -j 0 dnnc bench $(python3 - <<'PY'
import importlib.util, os
for name in ("torch", "sympy", "triton", "networkx", "transformers", "timm", "diffusers", "xdsl", "cudnn",
             "safetensors", "huggingface_hub", "tokenizers", "jinja2", "filelock", "fsspec", "numpy", "rich"):
    spec = importlib.util.find_spec(name)
    if spec is not None and spec.submodule_search_locations:
        print(*spec.submodule_search_locations)
PY
) >/dev/null 2>&1
echo "bytecode compiled in ${SECONDS} s"

[ -n "${DNNC_DEVICE_READY:-}" ] || {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 - <<'PY'
import platform, torch, importlib.metadata as md
print("python", platform.python_version())
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())
for name in ("triton", "xdsl", "safetensors", "numpy", "click", "rich", "nvidia-cudnn-frontend", "timm", "transformers", "diffusers"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "not installed")
PY
} 2>&1 | tee "$OUT/environment.txt"

SMOKE_TESTS="tests/runtime/test_artifact_gpu.py tests/runtime/test_gpu_models.py tests/partition/test_partition_gpu.py
  tests/backends/cudnn/test_cudnn_gpu.py tests/backends/triton/test_index_check.py tests/kernels/test_user_kernels_gpu.py
  tests/specs/test_tune_gpu.py tests/specs/test_legality.py"
# each_gpu PREFIX BUILDER LOG: for each GPU g whose variable PREFIX<g> is set, the command
# BUILDER prints for (g, that value), all at once, each with only GPU g visible, $OUT set to
# $OUT/gpu<g>, pinned to its share of the cores (its compile workers too) and its output in
# $OUT/gpu<g>/LOG; waits for them all.
each_gpu() {
  local prefix=$1 builder=$2 log=$3 gpus cores g var pids=() pin
  gpus=$(nvidia-smi -L | grep -c '^GPU')
  cores=$(( $(nproc) / gpus ))
  for g in $(seq 0 $(( gpus - 1 ))); do
    var=$prefix$g
    [ -n "${!var:-}" ] || continue
    mkdir -p "$OUT/gpu$g"
    pin=()
    command -v taskset >/dev/null && pin=(taskset -c "$(( g * cores ))-$(( g * cores + cores - 1 ))")
    CUDA_VISIBLE_DEVICES=$g DNNC_COMPILE_WORKERS=$cores DNNC_DEVICE_READY=1 OUT="$OUT/gpu$g" \
      "${pin[@]}" bash -c "$("$builder" "$g" "${!var}")" > "$OUT/gpu$g/$log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
}
suite_part() {
  echo "python3 bench/run.py --workloads '$2' --variants '${SUITE_VARIANTS:-graph,compile,dnnc,jax}' --policies '${SUITE_POLICIES:-auto}' --no-update --out \"\$OUT\""
}
as_given() { echo "$2"; }

steps=${*:-tests gpu-tests bench}
status=0
for step in $steps; do
  case $step in
    tests)
      python3 -m pytest -n 8 -q -p no:cacheprovider --junitxml="$OUT/tests.xml" tests 2>&1 | tee "$OUT/tests.log" | tail -25
      [ "${PIPESTATUS[0]}" = 0 ] || status=1 ;;
    gpu-tests)
      workers=${GPU_TEST_WORKERS:-1}
      # shellcheck disable=SC2086
      DNNC_COMPILE_WORKERS=${DNNC_COMPILE_WORKERS:-$(( $(nproc) / workers ))} \
      python3 -m pytest -n "$workers" -q -p no:cacheprovider -p scripts.pytest_live -m gpu -rfE ${PYTEST_ARGS:-tests} 2>&1 | tee "$OUT/gpu-tests.log" | tail -40
      [ "${PIPESTATUS[0]}" = 0 ] || status=1 ;;
    gpu-smoke)
      # shellcheck disable=SC2086
      python3 -m pytest -q -p no:cacheprovider -p scripts.pytest_live -m gpu -rfE --durations=15 \
        $SMOKE_TESTS 2>&1 | tee "$OUT/gpu-smoke.log" | tail -40
      [ "${PIPESTATUS[0]}" = 0 ] || status=1 ;;
    gpu-rest)
      # shellcheck disable=SC2086
      python3 -m pytest -q -p no:cacheprovider -p scripts.pytest_live -m gpu -rfE --durations=15 \
        $(printf -- '--ignore=%s ' $SMOKE_TESTS tests/zoo) tests 2>&1 | tee "$OUT/gpu-rest.log" | tail -40
      [ "${PIPESTATUS[0]}" = 0 ] || status=1 ;;
    zoo-gpu)
      workers=${ZOO_TEST_WORKERS:-1}
      # shellcheck disable=SC2086
      DNNC_COMPILE_WORKERS=${DNNC_COMPILE_WORKERS:-$(( $(nproc) / workers ))} \
      python3 -m pytest -n "$workers" -q -p no:cacheprovider -p scripts.pytest_live -m gpu -rfE --durations=0 \
        ${PYTEST_ARGS:-tests/zoo} 2>&1 | tee "$OUT/zoo-gpu.log" | tail -60
      [ "${PIPESTATUS[0]}" = 0 ] || status=1 ;;
    bench)
      python3 bench/compiler_speed.py --out "$OUT/compiler-speed.json" 2>&1 | tee "$OUT/compiler-speed.log" || status=1
      for b in bench/cudnn_block_resnet.py bench/triton_bandwidth.py; do
        [ -f "$b" ] && { python3 "$b" --out "$OUT" 2>&1 | tee "$OUT/$(basename "$b" .py).log" || status=1; }
      done ;;
    compile-time)
      # shellcheck disable=SC2086
      python3 bench/compile_time.py --timm "${COMPILE_TIMM-mobilenetv2_100,ghostnet_100,tf_efficientnet_b0}" \
        --workloads "${COMPILE_WORKLOADS:-}" --policies "${COMPILE_POLICIES:-auto,greedy}" ${COMPILE_PROFILE:+--profile} \
        ${COMPILE_NAME:+--name "$COMPILE_NAME"} --out "$OUT" 2>&1 | tee "$OUT/compile-time${COMPILE_NAME:+-$COMPILE_NAME}.log" || status=1 ;;
    compile-table)
      python3 bench/compile_table.py --workloads "${TABLE_WORKLOADS:-}" ${TABLE_DEADLINE_S:+--deadline-s "$TABLE_DEADLINE_S"} \
        ${TABLE_NAME:+--name "$TABLE_NAME"} ${TABLE_WARM:+--warm-variants "$TABLE_WARM"} ${TABLE_VARIANTS:+--variants "$TABLE_VARIANTS"} --out "$OUT" 2>&1 | tee "$OUT/compile-table${TABLE_NAME:+-$TABLE_NAME}.log" || status=1 ;;
    tuning-times)
      python3 bench/tuning_times.py --workloads "${TUNING_WORKLOADS:-unet2d-b8,convnext_tiny-b32}" \
        ${TUNING_NAME:+--name "$TUNING_NAME"} --out "$OUT" 2>&1 | tee "$OUT/tuning-times.log" || status=1 ;;
    export-time)
      python3 bench/export_time.py --workloads "${EXPORT_WORKLOADS:-resnet50-b32,unet2d-b8}" ${EXPORT_PROFILE:+--profile} --out "$OUT" 2>&1 \
        | tee "$OUT/export-time.log" || status=1 ;;
    compile-spread)
      python3 bench/compile_spread.py --workloads "${SPREAD_WORKLOADS:-mobilenetv3_large_100-b1}" \
        --compiles "${SPREAD_COMPILES:-3}" --out "$OUT" 2>&1 | tee "$OUT/compile-spread.log" || status=1 ;;
    timing-probe)
      python3 bench/timing_probe.py --out "$OUT" 2>&1 | tee "$OUT/timing-probe.log" || status=1 ;;
    call-overhead)
      python3 bench/call_overhead.py --workloads "${OVERHEAD_WORKLOADS:-conv-block-b1}" --out "$OUT" 2>&1 \
        | tee "$OUT/call-overhead.log" || status=1 ;;
    step-profile)
      # $AB_SIDES given: each side's tree in turn ("after" is this one), under $OUT/profile-<side>
      for side in ${AB_SIDES:-here}; do
        tree=$PWD; [ "$side" = after ] || [ "$side" = here ] || tree=$PWD/.ab-$side
        [ -d "$tree/dnnc" ] || { echo "step-profile: no tree in $tree (scripts/ab_tree.sh REV $side, and carry it)"; status=2; continue; }
        dir=$OUT; [ "$side" = here ] || dir=$OUT/profile-$side
        mkdir -p "$dir"
        rest=${PYTHONPATH#"$PWD"}
        # shellcheck disable=SC2086
        (cd "$tree" && PYTHONPATH="$tree$rest" python3 bench/compile_profile.py --workloads "${PROFILE_WORKLOADS:-resnet50-b1}" \
          ${PROFILE_ARGS:-} --out "$dir") > "$dir/step-profile.log" 2>&1 || status=1
        grep -h "kernels .* ms a call" "$dir/step-profile.log" | sed "s/^/$side: /"
      done ;;
    buckets)
      for w in ${BUCKET_WORKLOADS:-resnet50 bert-batch bert-seq}; do
        # shellcheck disable=SC2086
        python3 bench/buckets.py --workload "$w" ${BUCKET_VARIANTS:+--variants "$BUCKET_VARIANTS"} ${BUCKET_NAME:+--name "$w-$BUCKET_NAME"} \
          --out "$OUT" 2>&1 | tee "$OUT/buckets-$w.log" || status=1
      done ;;
    ncu-kernels)
      ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
      [ -n "$ncu_bin" ] || { echo "ncu-kernels: no ncu here"; status=2; }
      for w in $(echo "${NCU_WORKLOADS:-resnet50-b32}" | tr , ' '); do
        [ -n "$ncu_bin" ] || break
        python3 bench/ncu_kernels.py save --workload "$w" --artifact "/tmp/ncu-$w.dnnc" > "$OUT/ncu-$w.log" 2>&1 || { status=1; continue; }
        "$ncu_bin" --clock-control none --profile-from-start off --target-processes application-only \
          ${NCU_SET:+--set "$NCU_SET"} \
          --section SpeedOfLight --section Occupancy --section LaunchStats --csv --log-file "$OUT/ncu-$w.csv" \
          python3 bench/ncu_kernels.py run --workload "$w" --artifact "/tmp/ncu-$w.dnnc" >> "$OUT/ncu-$w.log" 2>&1 || status=1
        python3 bench/ncu_kernels.py table "$OUT/ncu-$w.csv" --out "$OUT/ncu-$w.json" | tee -a "$OUT/ncu-$w.log" | head -80
      done ;;
    cold-load)
      python3 bench/cold_load.py ${COLD_LOAD_WORKLOADS:+--workloads "$COLD_LOAD_WORKLOADS"} --out "$OUT" 2>&1 \
        | tee "$OUT/cold-load.log" || status=1 ;;
    cross-target)
      python3 bench/cross_target.py ${CROSS_WORKLOADS:+--workloads "$CROSS_WORKLOADS"} --out "$OUT" 2>&1 \
        | tee "$OUT/cross-target.log" || status=1 ;;
    serve-prepare)
      python3 bench/serve_bench.py prepare --out "$OUT" 2>&1 | tee "$OUT/serve-prepare.log" || status=1 ;;
    serve)
      if compgen -G ".whl-serve/*.whl" >/dev/null; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-serve .whl-serve/*.whl || exit 1
        export PYTHONPATH="$PYTHONPATH:/tmp/site-serve"
      fi
      [ -f "${DNNC_SERVE_BENCH_DIR:-/tmp/dnnc-serve-bench}/r50.dnnc" ] || python3 bench/serve_bench.py prepare --out "$OUT" 2>&1 | tee "$OUT/serve-prepare.log"
      # shellcheck disable=SC2086
      python3 bench/serve_bench.py serve --gpus "${SERVE_GPUS:-1}" ${SERVE_VARIANTS:+--variants "$SERVE_VARIANTS"} \
        ${SERVE_NAME:+--name "$SERVE_NAME"} --out "$OUT" 2>&1 | tee "$OUT/serve${SERVE_NAME:+-$SERVE_NAME}.log" || status=1 ;;
    suite)
      python3 bench/run.py --workloads "${SUITE_WORKLOADS:-}" --variants "${SUITE_VARIANTS:-graph,compile,dnnc,jax}" \
        --policies "${SUITE_POLICIES:-auto}" --no-update --out "$OUT" 2>&1 | tee "$OUT/suite.log" || status=1 ;;
    suite-pair|suite-gpus)
      # The suite split over the machine's GPUs, all at once: $SUITE_WORKLOADS_<g> on GPU g
      # (a GPU whose variable is empty or unset runs nothing); results under $OUT/gpu<g> (merge
      # them with bench/merge_suite.py). Timings are each GPU's own; compile times are those of
      # a host with that share of the cores.
      each_gpu SUITE_WORKLOADS_ suite_part suite.log
      # $SUITE_QUIET: workloads bound by the host (the conv block at batch 1), run after
      # the lanes on GPU 0 with the host to themselves, under $OUT/quiet: the conv block's
      # call took 0.014 and 0.018 ms in two runs beside three other GPUs' compiles.
      if [ -n "${SUITE_QUIET:-}" ]; then
        mkdir -p "$OUT/quiet"
        CUDA_VISIBLE_DEVICES=0 OUT="$OUT/quiet" bash -c "$(suite_part 0 "$SUITE_QUIET")" > "$OUT/quiet/suite.log" 2>&1 || status=1
      fi
      # The device returns 8 files a call: the JSON and the log of each GPU's part; the
      # tables and the chart are made again from the merged JSON.
      rm -f "$OUT"/gpu*/*.md "$OUT"/gpu*/*.png "$OUT"/quiet/*.md "$OUT"/quiet/*.png
      tail -n 4 "$OUT"/gpu*/suite.log ${SUITE_QUIET:+"$OUT"/quiet/suite.log} ;;
    ab)
      mkdir -p "$OUT/ab"
      sides=${AB_SIDES:-before after}
      missing=$(for side in $sides; do [ "$side" = after ] || [ -d ".ab-$side/dnnc" ] || echo ".ab-$side"; done)
      [ -z "$missing" ] || { echo "ab: no tree in" $missing "(scripts/ab_tree.sh REV NAME, and carry it)"; status=2; continue; }
      for w in ${AB_WORKLOADS//,/ }; do
        for side in $sides; do
          tree=$PWD; [ "$side" = after ] || tree=$PWD/.ab-$side
          rest=${PYTHONPATH#"$PWD"}  # /tmp/site and the like, after this tree
          (cd "$tree" && PYTHONPATH="$tree$rest" timeout "${AB_TIMEOUT_S:-110}" python3 bench/compile_table.py \
            --workloads "$w" --variants auto --warm-variants "" --name "ab${AB_NAME:+-$AB_NAME}-$side-$w" --out "$OUT/ab") \
            >> "$OUT/ab/ab-$side.log" 2>&1 || status=1
          grep -h "run .* ms" "$OUT/ab/ab-$side.log" | tail -1 | sed "s/^/$side $w: /"
        done
      done ;;
    pack)
      tar -czf /tmp/dnnc-out.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/dnnc-out.tgz "$OUT/out.tgz" \
        || status=1 ;;
    setup) ;;
    lanes)
      # Different work on each GPU at once: $LANE_<g> is a shell command (it may call
      # `bash scripts/device_run.sh STEP` or a bench script directly, this setup done); a GPU
      # whose variable is empty or unset runs nothing.
      each_gpu LANE_ as_given lane.log
      tail -n 6 "$OUT"/gpu*/lane.log ;;
    zoo-bench)
      zoo=${ZOO_WORKLOADS:-$(python3 -c "from bench.suite.workloads import ZOO_WORKLOADS; print(','.join(ZOO_WORKLOADS))")}
      python3 bench/run.py --workloads "$zoo" --variants eager,graph,compile,dnnc --policies greedy --no-update \
        --out "$OUT" 2>&1 | tee "$OUT/zoo-bench.log" || status=1 ;;
    *) echo "unknown step $step"; status=2 ;;
  esac
done
exit $status
