import { z } from "zod";
import { engineNames } from "../catalog/light.js";
import { byteCount, cardIndex, identifier, label, maxCardsPerNode } from "./agent-fields.js";

/** What an agent reports of its node at its join and whenever it changed: cards, memory, engines. */
export const cardInventorySchema = z.object({
  index: cardIndex,
  uuid: label("a GPU's uuid"),
  /** nvidia-smi's product name, e.g. "NVIDIA H100 80GB HBM3". */
  name: label("a GPU's name"),
  class: identifier("a GPU's class", 64),
  memory_bytes: byteCount,
  /** What the card says is used (nvidia-smi's memory.used); absent where the driver does not tell (MIG, some vGPUs). */
  memory_used_bytes: byteCount.optional(),
  /**
   * Memory held on the card by processes llmgw did not start (nvidia-smi's
   * compute apps without an engine's marker). Placement counts it as taken.
   * Absent from agents of earlier releases and where the driver lists no processes.
   */
  memory_foreign_bytes: byteCount.optional(),
  fabric: identifier("a GPU's fabric"),
});
export type CardInventory = z.infer<typeof cardInventorySchema>;

/**
 * Which llama.cpp a node runs llamacpp replicas with: llama-server found on
 * its PATH (or at --engine-path), with the version it prints, or llmgw's
 * built-in engine (node-llama-cpp) with its prebuilt builds and the one a
 * replica on this node gets (CUDA when the node has NVIDIA cards and the
 * CUDA build is installed, the CPU build otherwise).
 */
export const llamaCppInventorySchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("llama-server"), path: z.string().min(1).max(4096), version: z.string().max(200).nullable() }),
  z.object({
    kind: z.literal("built-in"),
    version: z.string().min(1).max(64),
    builds: z.array(z.enum(["cpu", "cuda", "vulkan", "metal"])).max(4),
    build: z.enum(["cpu", "cuda", "vulkan", "metal"]),
  }),
]);
export type LlamaCppInventory = z.infer<typeof llamaCppInventorySchema>;

export const inventorySchema = z.object({
  hostname: label("the hostname"),
  gpus: z.array(cardInventorySchema).max(maxCardsPerNode),
  memory_bytes: byteCount,
  cpu_cores: z.number().int().min(1).max(1_048_576),
  /** Engines whose program this node has (every engine when simulated). */
  engines: z.array(z.enum(engineNames)).max(engineNames.length * 4),
  /** Free bytes on the file system of the weights cache. */
  disk_free_bytes: byteCount,
  /** True when the GPUs are pretend and every engine is the simulated one (--simulate). */
  simulated: z.boolean(),
  /**
   * ComfyUI on this node: whether its checkout is there, and whether the agent
   * can install it (--comfyui-install) when a ComfyUI model is first placed.
   * Absent from agents of earlier releases.
   */
  comfyui: z.object({ present: z.boolean(), installable: z.boolean() }).optional(),
  /** Which llama.cpp runs llamacpp replicas here; absent from agents of earlier releases and from nodes with none. */
  llama_cpp: llamaCppInventorySchema.optional(),
  /**
   * The agent's llmgw release (`llmgw --version`), so an operator upgrading a
   * fleet node by node sees which nodes run which release. Optional: agents of
   * 0.1.0 send none and still join.
   */
  agent_version: z.string().min(1).max(64).optional(),
});
export type Inventory = z.infer<typeof inventorySchema>;
