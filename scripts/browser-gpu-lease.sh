#!/usr/bin/env bash
# The GPU machine's side of BENCHMARKS.md, "Browser on the GPU machine": copied to .gpu/h/lease.sh
# beside the bench bundle (.gpu/h/webgpu.mjs) and scripts/browser-gpu-bench.mjs, run from the
# checkout's root there. Modes: prep (reassemble Chromium and the web build in /tmp); study (timing
# study in Node and Chromium, chrome://gpu, the Node bench on the panel's shapes and the backward);
# study2 (the same study, the panel's decoding rows, Node's); panel (every panel row);
# decode SHAPES PREFS (decoding with --decode-prefs beside SDPA FLASH). The SM clock is logged
# (nvidia-smi, every 100 ms) into $OUT beside each mode's log.
set -o pipefail
LD0="$LD_LIBRARY_PATH"
stamp() { echo "=== $1 $(date -u +%H:%M:%S.%N)"; }
if [ "$1" = prep ]; then
  mkdir -p /tmp/chr /tmp/web
  python3 -c "import lzma,tarfile,sys; f=open('/tmp/chr.tar.xz','wb'); [f.write(open(p,'rb').read()) for p in sys.argv[1:]]; f.close(); tarfile.open('/tmp/chr.tar.xz','r:xz').extractall('/tmp/chr'); tarfile.open('.gpu/w/web.tar.xz','r:xz').extractall('/tmp/web')" .gpu/c12/part.00 .gpu/c12/part.b .gpu/c3/part.c || exit 1
  rm -f /tmp/chr.tar.xz; ls /tmp/chr/chromium | head; ls /tmp/web/dist; nvidia-smi; date -u
  exit 0
fi
source .gpu/on-gpu.sh
export FONTCONFIG_FILE=$PWD/.gpu/f/fonts.conf VK_ICD_FILENAMES=$VK_DRIVER_FILES FLASHSCOPE_WEBGPU=$PWD/.gpu/webgpu/index.js
mkdir -p /work/fontdir && cp .gpu/f/*.ttf /work/fontdir/
CL=/tmp/chr/chromium:/tmp/chr/lib${LD0:+:$LD0}
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,pstate --format=csv -lms 100 > $OUT/clocks-$1.csv 2>&1 &
SMI=$!
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,persistence_mode --format=csv; nvidia-smi -q -d PERFORMANCE,CLOCK | head -60; date -u; /tmp/chr/chromium/chromium --version; } > $OUT/gpu-$1.txt 2>&1
curl -s -o /dev/null http://127.0.0.1:4173/ || (cd /tmp/web/dist && exec python3 -m http.server 4173 --bind 127.0.0.1 > /tmp/http.log 2>&1 &)
sleep 1
B=(env LD_LIBRARY_PATH=$CL CHROMIUM=/tmp/chr/chromium/chromium PLAYWRIGHT_CORE=/tmp/web/playwright-core/index.mjs URL=http://127.0.0.1:4173/)
F="grep --line-buffered -v TextRunHarfBuzz\|dbus\|GLib"
case "$1" in
  study)
    {
      stamp node-study; timeout 100 node .gpu/h/webgpu.mjs --timing-study
      stamp browser-study; "${B[@]}" timeout 130 node .gpu/h/browser-gpu-bench.mjs --gpu-info --study
      stamp browser-study-norobust; "${B[@]}" CHROMIUM_FLAGS="--enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia,disable_robustness" timeout 110 node .gpu/h/browser-gpu-bench.mjs --study
      stamp end
    } 2>&1 | $F | tee $OUT/study.log | grep -v gpuInfo | cut -c1-700
    stamp node-bench | tee $OUT/node.log
    timeout 170 node .gpu/h/webgpu.mjs --skip tiles --n 4096,8192 --no-65536 --paths flash-matrix,decode --no-anchor --decode-shapes 16:16:8192,32:8:8192,16:16:32768,32:8:32768 2>&1 | tee -a $OUT/node.log
    stamp node-bwd | tee -a $OUT/node.log
    timeout 80 node .gpu/h/webgpu.mjs --pass backward --n 4096 --d 128 --bwd-paths flash-matrix --no-anchor 2>&1 | tee -a $OUT/node.log ;;
  study2)
    {
      stamp node-study; timeout 100 node .gpu/h/webgpu.mjs --timing-study
      stamp browser-study; "${B[@]}" timeout 130 node .gpu/h/browser-gpu-bench.mjs --study
      stamp panel-decode; "${B[@]}" ROWS=decode timeout 200 node .gpu/h/browser-gpu-bench.mjs
      stamp node-decode; timeout 90 node .gpu/h/webgpu.mjs --no-forward --paths decode --no-anchor --decode-shapes 16:16:8192,32:8:8192,16:16:32768,32:8:32768
      stamp end
    } 2>&1 | $F | tee $OUT/study2.log | cut -c1-600 ;;
  decode)
    timeout 500 node .gpu/h/webgpu.mjs --skip tiles --no-65536 --no-forward --paths decode --decode-shapes "$2" --decode-prefs "$3" 2>&1 | tee $OUT/decode.log ;;
  panel)
    stamp panel
    "${B[@]}" timeout 555 node .gpu/h/browser-gpu-bench.mjs 2>&1 | $F | tee $OUT/panel.log ;;
esac
stamp done
kill $SMI
