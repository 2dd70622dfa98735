import type { NodeLlamaCppView } from "./llama-cpp-view.js";

/** One shipped preset (`ctl model presets --json`, GET /api/v1/presets). */
export interface PresetView {
  name: string;
  description: string;
  licence: { name: string; url: string };
  tasks: string[];
  /** Catalog models added from it (under its name or another). */
  added_as: string[];
  /** What each profile needs, in the model's order of preference. */
  profiles: PresetProfileView[];
  /** Where one replica would run on the live fleet now (the first profile that fits, as placement chooses); null when none does. */
  runs_on: PresetPlacementView | null;
  /** Why nothing fits now, in placement's words; null when it fits. */
  why_not: string | null;
  /** Whether it answers for real on a CPU of the fleet now; null for a preset with no CPU (llamacpp, no cards) profile. */
  on_cpu: PresetCpuView | null;
}

/**
 * A preset's CPU profile against the nodes that run llama.cpp for real
 * (llama-server, or llmgw's built-in engine; a simulated node does not count):
 * where one replica would go, by placement over those nodes alone (their host
 * memory and cores), or why it would not.
 */
export interface PresetCpuView {
  /** The CPU profile placement chose, or the first one when none fits. */
  profile: string;
  /** The node it would run on now; null when none fits. */
  node: string | null;
  /** The llama.cpp that node runs it with. */
  llama_cpp: NodeLlamaCppView | null;
  /** Why no node's CPU runs it now; null when one does. */
  why_not: string | null;
}

export interface PresetProfileView {
  name: string;
  engine: string;
  source: string;
  gpu_class: string | null;
  gpus: number;
  quantization: string | null;
  /** The weights' size as the planner counted them from the checkpoint's own headers (a ComfyUI profile: the sum of its workflow's files); null when a source could not be read. */
  weights_bytes: number | null;
  /** GPU profiles: what each card must hold (weights, runtime, KV cache at the preset's context). */
  bytes_per_card: number | null;
  /** CPU profiles: the planner's estimate of host memory (weights and every slot's KV cache), and what the profile reserves. */
  planned_memory_bytes: number | null;
  memory_bytes: number | null;
  cpu_cores: number | null;
  /** Why the planner could not read the source (the hub unreachable, a gated repository without a token). */
  unreadable: string | null;
}

export interface PresetPlacementView {
  profile: string;
  node: string;
  cards: number[];
  /** The cards' class, or null for a CPU profile. */
  gpu_class: string | null;
}
