import { adapterEngines, type EngineName } from "../../catalog/for-engines.js";
import type { EngineDriver } from "../driver.js";
import { comfyuiDriver } from "./comfyui.js";
import { llamacppDriver } from "./llamacpp.js";
import { sglangDriver } from "./sglang.js";
import { trtllmDriver } from "./trtllm.js";
import { vllmDriver } from "./vllm.js";

/** Every engine llmgw runs as a process, in the order of catalog/schema.ts's engineNames. */
export const engineDrivers: readonly EngineDriver[] = [vllmDriver, sglangDriver, trtllmDriver, llamacppDriver, comfyuiDriver];

const driversByEngine: Readonly<Record<EngineName, EngineDriver>> = {
  vllm: vllmDriver,
  sglang: sglangDriver,
  trtllm: trtllmDriver,
  llamacpp: llamacppDriver,
  comfyui: comfyuiDriver,
};

export function driverFor(engine: EngineName): EngineDriver {
  return driversByEngine[engine];
}

/** Engines whose driver can attach LoRA adapters: the catalog's list, which refuses adapters on any other. */
export const enginesWithAdapters: readonly EngineName[] = adapterEngines;
