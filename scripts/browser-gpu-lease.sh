#!/usr/bin/env bash
# The GPU machine's side of BENCHMARKS.md, "Browser on the GPU machine": copied to .gpu/gpu/h/lease.sh
# beside the bench bundle (h/webgpu.mjs) and scripts/browser-gpu-bench.mjs, run from the
# checkout's root there; the Chromium parts (c*/part.*), the web build (w/web.tar.xz), the font
# (f/) and optionally Dawn's Node module (x/webgpu.tar.xz) lie beside h/. Modes: stash (keep this call's Chromium parts, and Node if carried, in /tmp for a later call);
# prep (reassemble Chromium and the web build in /tmp); study (timing study in Node and Chromium,
# chrome://gpu, the Node bench on the panel's shapes and the backward); study2 (the same study, the
# panel's decoding rows, Node's); gqa (the study, the panel's GQA decoding rows, Node's beside
# SDPA FLASH); panel (every panel row); decode SHAPES PREFS (decoding with --decode-prefs beside
# SDPA FLASH). The SM clock is logged (nvidia-smi, every 100 ms) into $OUT beside each mode's log.
set -o pipefail
LD0="$LD_LIBRARY_PATH"
H=$(dirname "$0")
R=$(dirname "$H")
stamp() { echo "=== $1 $(date -u +%H:%M:%S.%N)"; }
if [ "$1" = stash ]; then
  mkdir -p /tmp/parts && cp "$R"/c*/part.* /tmp/parts/ && ls -l /tmp/parts
  # Node too, where this call carries it (on-gpu.sh then finds it unpacked)
  if [ -f .gpu/node.xz ] && [ ! -x /tmp/node-bin/node ]; then mkdir -p /tmp/node-bin && xz -dc .gpu/node.xz > /tmp/node-bin/node && chmod +x /tmp/node-bin/node; fi
  exit 0
fi
if [ "$1" = prep ]; then
  mkdir -p /tmp/chr /tmp/web /tmp/parts
  cp "$R"/c*/part.* /tmp/parts/ 2>/dev/null
  python3 -c "import lzma,tarfile,sys; f=open('/tmp/chr.tar.xz','wb'); [f.write(open(p,'rb').read()) for p in sorted(sys.argv[2:])]; f.close(); tarfile.open('/tmp/chr.tar.xz','r:xz').extractall('/tmp/chr'); tarfile.open(sys.argv[1],'r:xz').extractall('/tmp/web')" "$R/w/web.tar.xz" /tmp/parts/part.* || exit 1
  rm -f /tmp/chr.tar.xz; ls /tmp/chr/chromium | head; ls /tmp/web/dist; nvidia-smi; date -u
  # Dawn's Node module, where it travels compressed (x/webgpu.tar.xz; dawn.node is 21 MB as is)
  if [ -f "$R/x/webgpu.tar.xz" ]; then tar -xJf "$R/x/webgpu.tar.xz" -C /tmp && ls -l /tmp/webgpu; fi
  exit 0
fi
source .gpu/on-gpu.sh
WG=$PWD/.gpu/webgpu
[ -f /tmp/webgpu/index.js ] && WG=/tmp/webgpu
export FONTCONFIG_FILE=$PWD/$R/f/fonts.conf VK_ICD_FILENAMES=$VK_DRIVER_FILES FLASHSCOPE_WEBGPU=$WG/index.js
mkdir -p /work/fontdir && cp "$R"/f/*.ttf /work/fontdir/
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
      stamp node-study; timeout 100 node $H/webgpu.mjs --timing-study
      stamp browser-study; "${B[@]}" timeout 130 node $H/browser-gpu-bench.mjs --gpu-info --study
      stamp browser-study-norobust; "${B[@]}" CHROMIUM_FLAGS="--enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia,disable_robustness" timeout 110 node $H/browser-gpu-bench.mjs --study
      stamp end
    } 2>&1 | $F | tee $OUT/study.log | grep -v gpuInfo | cut -c1-700
    stamp node-bench | tee $OUT/node.log
    timeout 170 node $H/webgpu.mjs --skip tiles --n 4096,8192 --no-65536 --paths flash-matrix,decode --no-anchor --decode-shapes 16:16:8192,32:8:8192,16:16:32768,32:8:32768 2>&1 | tee -a $OUT/node.log
    stamp node-bwd | tee -a $OUT/node.log
    timeout 80 node $H/webgpu.mjs --pass backward --n 4096 --d 128 --bwd-paths flash-matrix --no-anchor 2>&1 | tee -a $OUT/node.log ;;
  study2)
    {
      stamp node-study; timeout 100 node $H/webgpu.mjs --timing-study
      stamp browser-study; "${B[@]}" timeout 130 node $H/browser-gpu-bench.mjs --study
      stamp panel-decode; "${B[@]}" ROWS=decode timeout 200 node $H/browser-gpu-bench.mjs
      stamp node-decode; timeout 90 node $H/webgpu.mjs --no-forward --paths decode --no-anchor --decode-shapes 16:16:8192,32:8:8192,16:16:32768,32:8:32768
      stamp end
    } 2>&1 | $F | tee $OUT/study2.log | cut -c1-600 ;;
  gqa)
    {
      stamp panel-decode; "${B[@]}" ROWS='decode Hq(32|64)' timeout 170 node $H/browser-gpu-bench.mjs
      stamp node-decode; timeout 130 node $H/webgpu.mjs --skip tiles --no-65536 --no-forward --paths decode --decode-shapes 32:8:8192,64:8:8192,32:8:32768,64:8:32768
      stamp node-study; timeout 100 node $H/webgpu.mjs --timing-study
      stamp browser-study; "${B[@]}" timeout 130 node $H/browser-gpu-bench.mjs --study
      stamp end
    } 2>&1 | $F | tee $OUT/gqa.log | cut -c1-900 ;;
  decode)
    timeout 500 node $H/webgpu.mjs --skip tiles --no-65536 --no-forward --paths decode --decode-shapes "$2" --decode-prefs "$3" 2>&1 | tee $OUT/decode.log ;;
  panel)
    stamp panel
    "${B[@]}" timeout 555 node $H/browser-gpu-bench.mjs 2>&1 | $F | tee $OUT/panel.log ;;
esac
stamp done
kill $SMI
