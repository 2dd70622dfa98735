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
 * `llmgw demo --large` adds two machines of eight H100s on one InfiniBand
 * fabric: the fleet that holds DeepSeek-V3 (688.6 GB of FP8 weights) as one
 * replica over both. Each agent is told its address on the fabric (this
 * machine's loopback), where the members meet.
 */
export const demoLargeNodes = [
  { name: "gpu-node-3", simulate: "8xH100-80GB@ib0,cpu:96c/1024g", describe: "8× H100 80 GB on fabric ib0, 96 cores, 1 TiB" },
  { name: "gpu-node-4", simulate: "8xH100-80GB@ib0,cpu:96c/1024g", describe: "8× H100 80 GB on fabric ib0, 96 cores, 1 TiB" },
] as const;

/** The fabric address the large nodes' agents report: members of one replica meet there. */
export const demoFabricAddress = "127.0.0.1";

/** The model `--large` is for: added by the printed line, one replica over both large nodes. */
export const demoLargeModel = "deepseek-v3";

/**
 * The shipped presets the demo adds (`POST /api/v1/presets/{name}`), each
 * as its preset says: replicas of the first three are placed at once, the
 * 70B one is on demand (its preset's minimum is 0).
 */
export const demoPresets = ["qwen2.5-7b-instruct", "llama-3.1-8b", "qwen3-embedding-0.6b", "llama-3.3-70b-instruct"] as const;

/** The chat model the demo's printed curl, Python and Node lines talk to. */
export const demoChatModel = "qwen2.5-7b-instruct";
