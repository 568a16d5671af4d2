// Opening a WebGPU device for FlashScope's kernels. The GPU object comes in as a parameter
// (navigator.gpu in the browser, the `webgpu` package's create() under Node), so this
// module never imports anything platform-specific.

/** A subgroup-matrix shape the adapter offers (chromium-experimental-subgroup-matrix). */
export interface MatrixConfig {
  componentType: string;
  resultComponentType: string;
  M: number;
  N: number;
  K: number;
}

export type WebGpuPath = 'flash-f32' | 'flash-f16' | 'flash-subgroups' | 'flash-matrix' | 'standard' | 'decode';

export const PATH_LABELS: Record<WebGpuPath, string> = {
  'flash-f32': 'flash, f32',
  'flash-f16': 'flash, f16 storage (shader-f16)',
  'flash-subgroups': 'flash, f32 + subgroup row reductions',
  'flash-matrix': 'flash, f16 subgroup matrices (tensor cores)',
  standard: 'standard attention (S and P materialized)',
  decode: 'flash-decoding (split K/V + LSE combine)',
};

export interface WebGpuContext {
  /** Held so the GPU instance outlives the device (under Node, a collected instance takes the device down with it). */
  gpu: GPU;
  device: GPUDevice;
  adapterName: string;
  isFallback: boolean;
  features: string[];
  limits: {
    maxWorkgroupStorage: number;
    maxInvocations: number;
    maxStorageBinding: number;
    maxBuffer: number;
    maxWorkgroupsPerDim: number;
    /** minStorageBufferOffsetAlignment: where a binding into a buffer may start. */
    minStorageOffset: number;
  };
  subgroupMinSize: number;
  subgroupMaxSize: number;
  /** f16 × f16 → f32 matrix shapes; empty without the subgroup-matrix feature. */
  matrixConfigs: MatrixConfig[];
  timestamps: boolean;
  /** WGSL language features (navigator.gpu.wgslLanguageFeatures). */
  wgslFeatures: string[];
  paths: WebGpuPath[];
  /** Set once the device is lost; every later run fails with this message. */
  lost: string | undefined;
}

export class WebGpuUnavailable extends Error {
  override name = 'WebGpuUnavailable';
}

const WANTED: GPUFeatureName[] = ['shader-f16', 'subgroups', 'timestamp-query', 'chromium-experimental-subgroup-matrix' as GPUFeatureName];

export async function openWebGpu(gpu: GPU | undefined | null, adapterOptions: GPURequestAdapterOptions = {}): Promise<WebGpuContext> {
  if (!gpu) throw new WebGpuUnavailable('WebGPU is not available here (no navigator.gpu).');
  let adapter: GPUAdapter | null = null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: 'high-performance', ...adapterOptions });
  } catch (e) {
    throw new WebGpuUnavailable(`The WebGPU adapter request failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!adapter) throw new WebGpuUnavailable('No WebGPU adapter was found (requestAdapter returned null).');
  const features = WANTED.filter((f) => adapter.features.has(f));
  const al = adapter.limits;
  const requiredLimits: Record<string, number> = {
    maxComputeWorkgroupStorageSize: al.maxComputeWorkgroupStorageSize,
    maxComputeInvocationsPerWorkgroup: al.maxComputeInvocationsPerWorkgroup,
    maxComputeWorkgroupSizeX: al.maxComputeWorkgroupSizeX,
    maxStorageBufferBindingSize: al.maxStorageBufferBindingSize,
    maxBufferSize: al.maxBufferSize,
    maxStorageBuffersPerShaderStage: al.maxStorageBuffersPerShaderStage,
  };
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
  } catch (e) {
    throw new WebGpuUnavailable(`The WebGPU device request failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  const info = adapter.info as GPUAdapterInfo & { subgroupMatrixConfigs?: MatrixConfig[]; isFallbackAdapter?: boolean };
  const matrixConfigs = (info.subgroupMatrixConfigs ?? []).filter((m) => m.componentType === 'f16' && m.resultComponentType === 'f32');
  const has = (f: string) => features.includes(f as GPUFeatureName);
  const paths: WebGpuPath[] = ['flash-f32'];
  if (has('shader-f16')) paths.push('flash-f16');
  if (has('subgroups')) paths.push('flash-subgroups');
  if (has('chromium-experimental-subgroup-matrix') && has('shader-f16') && matrixConfigs.length > 0) paths.push('flash-matrix');
  paths.push('standard', 'decode');
  const name = [info.vendor, info.architecture, info.device, info.description].filter((s) => s).join(' · ') || 'unnamed adapter';
  const ctx: WebGpuContext = {
    gpu,
    device,
    adapterName: name,
    isFallback: Boolean(info.isFallbackAdapter),
    features: [...adapter.features].map(String).sort(),
    limits: {
      maxWorkgroupStorage: device.limits.maxComputeWorkgroupStorageSize,
      maxInvocations: device.limits.maxComputeInvocationsPerWorkgroup,
      maxStorageBinding: device.limits.maxStorageBufferBindingSize,
      maxBuffer: device.limits.maxBufferSize,
      maxWorkgroupsPerDim: device.limits.maxComputeWorkgroupsPerDimension,
      minStorageOffset: device.limits.minStorageBufferOffsetAlignment,
    },
    subgroupMinSize: info.subgroupMinSize ?? 0,
    subgroupMaxSize: info.subgroupMaxSize ?? 0,
    matrixConfigs,
    timestamps: has('timestamp-query'),
    wgslFeatures: [...(gpu.wgslLanguageFeatures ?? [])].map(String).sort(),
    paths,
    lost: undefined,
  };
  void device.lost.then((l) => {
    ctx.lost = `The GPU device was lost (${l.reason}): ${l.message || 'no details'}`;
  });
  return ctx;
}
