/**
 * The engines folder's face: the drivers and the built-in llama.cpp's install, for the
 * control plane and the agent. The two engines run as processes of their own and are
 * entered through `sim-process.ts` and `llama-process.ts`, so that neither the agent nor
 * one engine loads the other engine's code.
 */
export type { EngineDriver, DistributedLaunch, EngineLaunch, EngineLaunchInput } from "./driver.js";
export { driverFor } from "./drivers/index.js";
export { vllmMaxLoraRank } from "./drivers/vllm.js";
export { nodeDefaultBuild, builtinBuildFor } from "./llama/llama-build.js";
export { builtinLlamaInstall, type BuiltinLlamaInstall } from "./llama/llama-runtime.js";
export { runtimeAdapterEndpoints, flagValue, loadsAdaptersAtRuntime } from "./runtime-adapters.js";
