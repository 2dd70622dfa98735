/**
 * Which prebuilt llama.cpp build the built-in engine loads. Pure, so the
 * agent's inventory, the replica's view and the engine itself make one
 * decision: the CUDA build for a replica given cards (the agent sets
 * CUDA_VISIBLE_DEVICES to them and the driver asks for every layer on them,
 * split by layer across them), the CPU build otherwise. A replica given cards
 * never falls back to the CPU build: it would answer, a hundred times
 * slower, while holding the cards, so it fails instead.
 */
export type LlamaBuild = "cpu" | "cuda" | "vulkan" | "metal";

/** The engine's own view: the layers asked on the GPU (--n-gpu-layers) and the cards it may see (CUDA_VISIBLE_DEVICES). */
export function engineUsesCards(gpuLayers: number | undefined, visibleDevices: string | undefined): boolean {
  return (gpuLayers ?? 0) > 0 && visibleDevices !== undefined && visibleDevices.trim() !== "";
}

/** The build a replica on `cards` loads: CUDA on cards, the CPU build without. */
export function builtinBuildFor(cards: number): LlamaBuild {
  return cards > 0 ? "cuda" : "cpu";
}

/** The build a node's replicas load by default (what its inventory says): CUDA when it has NVIDIA cards and the CUDA build is installed. */
export function nodeDefaultBuild(cards: number, installed: readonly LlamaBuild[]): LlamaBuild {
  return cards > 0 && installed.includes("cuda") ? "cuda" : "cpu";
}
