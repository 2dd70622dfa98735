/**
 * The demo's pretend machines, in the shorthand `llmgw agent --simulate` takes.
 *
 * One H100 has 20 GiB held by a process llmgw did not start, so the fleet
 * page shows foreign memory and placement counts it as taken. It is card 1
 * of gpu-node-1, whose two cards the demo's first two models take at once
 * anyway: placement puts them where it did with both cards whole, each still
 * fits with room to spare, and the four L40S stay alike for the 70B model
 * (a replica's cards must be alike, and a card with less room is not).
 */
export const demoNodes = [
  { name: "gpu-node-1", simulate: "1xH100-80GB@nvl0,1xH100-80GB@nvl0+foreign=20g,cpu:32c/256g", describe: "2× H100 80 GB (20 GiB of card 1 held by another process), 32 cores, 256 GiB" },
  { name: "gpu-node-2", simulate: "4xL40S-48GB@pcie,cpu:64c/512g", describe: "4× L40S 48 GB, 64 cores, 512 GiB" },
] as const;

/**
 * The shipped presets the demo adds (`POST /api/v1/presets/{name}`), each
 * as its preset says: replicas of the first three are placed at once, the
 * 70B one is on demand (its preset's minimum is 0).
 */
export const demoPresets = ["qwen2.5-7b-instruct", "llama-3.1-8b", "qwen3-embedding-0.6b", "llama-3.3-70b-instruct"] as const;

/** The chat model the demo's printed curl, Python and Node lines talk to. */
export const demoChatModel = "qwen2.5-7b-instruct";
