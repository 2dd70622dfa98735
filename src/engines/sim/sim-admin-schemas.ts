import { z } from "zod";

/** The simulation's own admin input (POST /sim/fault): strict, as it is ours. */
export const faultRequestSchema = z.strictObject({ fault: z.string() });

/** vLLM's and SGLang's runtime LoRA bodies (POST /v1/load_lora_adapter, /load_lora_adapter and their unload twins). */
export const loadAdapterRequestSchema = z.looseObject({ lora_name: z.string().min(1), lora_path: z.string().min(1) });
export const unloadAdapterRequestSchema = z.looseObject({ lora_name: z.string().min(1) });
