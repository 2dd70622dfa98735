/** The engines folder's face: what other folders of src/ use from it. */
export type { EngineDriver, DistributedLaunch, EngineLaunch, EngineLaunchInput } from "./driver.js";
export { driverFor } from "./drivers/index.js";
export { vllmMaxLoraRank } from "./drivers/vllm.js";
export { nodeDefaultBuild, builtinBuildFor } from "./llama/llama-build.js";
export { runLlamaEngine } from "./llama/llama-engine.js";
export { builtinLlamaInstall, type BuiltinLlamaInstall } from "./llama/llama-runtime.js";
export { runtimeAdapterEndpoints, flagValue, loadsAdaptersAtRuntime } from "./runtime-adapters.js";
export { runSimEngine } from "./sim/run-sim-engine.js";
export { simulatedPng } from "./sim/sim-images.js";
