// The WebGPU panel sits below the debugger: its worker, adapter and device are started when a
// person reaches it, not on every page load (a learner who never scrolls there pays nothing).

/** How long it must stay reached: while the debugger above fills in, the panel passes through the viewport on its way down. */
const SETTLE_MS = 250;

/**
 * Calls `start` once, when `el` has stayed in the viewport for SETTLE_MS, or takes
 * focus or a pointer (a hidden element never intersects: it starts once shown and reached).
 * Returns a function that stops watching.
 */
export function onFirstSeen(el: Element, start: () => void): () => void {
  let done = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const fire = () => {
    if (done) return;
    done = true;
    stop();
    start();
  };
  const observer =
    typeof IntersectionObserver === 'undefined'
      ? null
      : new IntersectionObserver((entries) => {
          const seen = entries[entries.length - 1].isIntersecting;
          clearTimeout(timer);
          timer = seen ? setTimeout(fire, SETTLE_MS) : undefined;
        });
  observer?.observe(el);
  el.addEventListener('focusin', fire);
  el.addEventListener('pointerenter', fire);
  function stop() {
    clearTimeout(timer);
    observer?.disconnect();
    el.removeEventListener('focusin', fire);
    el.removeEventListener('pointerenter', fire);
  }
  if (!observer) fire();
  return stop;
}
