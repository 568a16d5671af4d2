// Fills an input tensor with pseudo-normal values directly on the GPU. Full-size problems
// (B·H = 64, N = 65536, d = 128: 2 GiB per tensor) cannot be generated in JS and uploaded
// in reasonable time; the kernel is a counter-based hash (PCG-style) so any element can be
// regenerated — the host re-reads sampled rows to check them against the CPU reference.

// f16 tensors are written as pairs packed in u32 words (pack2x16float, core WGSL): the decode
// path stores f16 on adapters without shader-f16 too. `first` is even for them (chunks are
// whole multiples of the binding alignment).
export function fillKernelWgsl(elem: 'f32' | 'f16'): string {
  const f16 = elem === 'f16';
  return /* wgsl */ `
// first: index in the whole tensor of this binding's element 0 (tensors past one binding
// are filled in chunks, and every element's value depends only on its index in the tensor).
struct Fill { count: u32, seed: u32, row_stride: u32, first: u32 }
@group(0) @binding(0) var<uniform> fill: Fill;
@group(0) @binding(1) var<storage, read_write> out: array<${f16 ? 'u32' : 'f32'}>;

fn hash(x: u32) -> u32 {
  var s = x * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}
fn unit(x: u32) -> f32 { return (f32(hash(x) >> 8u) + 0.5) / 16777216.0; }
// Box-Muller on two hashed uniforms: N(0, 1) for element g of the tensor.
fn normal(g: u32) -> f32 {
  let u1 = unit((g * 2u) ^ fill.seed);
  let u2 = unit((g * 2u + 1u) ^ (fill.seed * 0x9e3779b9u));
  return sqrt(-2.0 * log(u1)) * cos(6.2831853 * u2);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x + gid.y * fill.row_stride;
${
  f16
    ? `  // word i holds elements 2i and 2i + 1 (a last odd element pairs with 0)
  if (2u * i >= fill.count) { return; }
  let g = fill.first + 2u * i;
  out[i] = pack2x16float(vec2<f32>(normal(g), select(0.0, normal(g + 1u), 2u * i + 1u < fill.count)));`
    : `  if (i >= fill.count) { return; }
  out[i] = normal(fill.first + i);`
}
}
`;
}
