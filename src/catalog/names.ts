// Fixed lists of names, apart from the schemas that check them: the CLI's
// options name them in their help at every start, without loading zod.

export const engineNames = ["vllm", "sglang", "trtllm", "llamacpp", "comfyui"] as const;
export type EngineName = (typeof engineNames)[number];

/** Engines whose drivers can attach LoRA adapters; the catalog refuses adapters on a model with a profile of any other. */
export const adapterEngines: readonly EngineName[] = ["vllm", "sglang", "llamacpp"];

export const modelClasses = ["critical", "standard", "opportunistic"] as const;
export type ModelClass = (typeof modelClasses)[number];

export const usageSyncs = ["write", "disk"] as const;
export type UsageSync = (typeof usageSyncs)[number];
