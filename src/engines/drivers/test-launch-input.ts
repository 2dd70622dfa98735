import type { EngineLaunchInput } from "../driver.js";

/** A launch input for tests: one card, no adapters; override what a test is about. */
export function testLaunchInput(overrides: Partial<EngineLaunchInput> = {}): EngineLaunchInput {
  return {
    modelName: "qwen2.5-7b",
    weightsPath: "/var/lib/llmgw/weights/qwen2.5-7b",
    cards: [0],
    port: 41001,
    context: 32768,
    slots: 1,
    cpuCores: undefined,
    gpuMemoryUtilization: 0.9,
    quantization: undefined,
    adapters: [],
    extraArgs: [],
    extraEnv: {},
    enginePath: "/opt/ComfyUI",
    ...overrides,
  };
}
