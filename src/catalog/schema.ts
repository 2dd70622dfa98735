import { z } from "zod";
import { durationSchema } from "./duration.js";

/**
 * The model entry of SPEC S1. The same schema reads server.yaml entries, the
 * files given to `ctl model add -f` and the bodies of POST /api/v1/models, so
 * an entry moves between them by copy and paste. Objects are strict: an
 * unknown key is refused (and the nearest known key suggested) rather than
 * silently ignored, because a misspelt `gpu: 2` that is ignored runs the model
 * on one card.
 */

export const engineNames = ["vllm", "sglang", "trtllm", "llamacpp", "comfyui"] as const;
export type EngineName = (typeof engineNames)[number];

/** Engines that only run on GPUs, with tensor parallelism over the cards of one node. */
export const gpuOnlyEngines: readonly EngineName[] = ["vllm", "sglang", "trtllm"];
/** Engines that use one card at most. */
export const singleCardEngines: readonly EngineName[] = ["comfyui"];

/**
 * What a GPU engine profile may name: a precision (bf16, fp16), a format the
 * checkpoint is already in (int8, int4, awq, gptq), or one of vLLM's
 * --quantization methods an operator may want by name.
 */
export const gpuQuantizations = ["bf16", "fp16", "fp8", "int8", "int4", "awq", "gptq", "awq_marlin", "gptq_marlin", "bitsandbytes", "compressed-tensors"] as const;

/** Engines whose drivers can attach LoRA adapters; the catalog refuses adapters on a model with a profile of any other. */
export const adapterEngines: readonly EngineName[] = ["vllm", "sglang", "llamacpp"];

export const modelClasses = ["critical", "standard", "opportunistic"] as const;
export type ModelClass = (typeof modelClasses)[number];

const namePattern = /^[A-Za-z0-9][A-Za-z0-9._:\/-]{0,127}$/;
export const modelNameSchema = z
  .string()
  .regex(namePattern, { message: "a name of letters, digits and . _ : / - (at most 128, starting with a letter or digit)" });

/** `what` reads as the expectation: "a whole number of cards" → "a whole number of cards, 0 or more". */
const wholeNumber = (what: string, minimum: number) => {
  const message = `${what}, ${minimum} or more`;
  return z.number({ message }).int({ message }).min(minimum, { message });
};

const positiveNumber = (what: string) =>
  z.number({ message: `${what}: a number greater than 0` }).positive({ message: `${what}: a number greater than 0` });

export const profileSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: "a profile name of letters, digits and . _ -" }).optional(),
  engine: z.enum(engineNames, { message: `one of ${engineNames.join(", ")}` }),
  source: z.string().min(1, { message: "where the weights come from: a URL, hf://org/name@revision, or a local path" }),
  gpu_class: z.string().regex(/^[a-z0-9._-]+$/, { message: "a GPU class in lower case, such as h100, a100, l40s, rtx4090" }).optional(),
  gpus: wholeNumber("a whole number of cards", 0).optional(),
  quantization: z.string().optional(),
  memory_gb: positiveNumber("host memory in GB").optional(),
  cpu_cores: positiveNumber("CPU cores").optional(),
  slots: wholeNumber("a whole number of parallel request slots", 1).optional(),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
});
export type ProfileInput = z.infer<typeof profileSchema>;

export const scalingSchema = z.strictObject({
  min: wholeNumber("a whole number of replicas", 0).optional(),
  max: wholeNumber("a whole number of replicas", 0).optional(),
  idle_timeout: durationSchema.optional(),
});

export const adapterSchema = z.strictObject({
  name: modelNameSchema,
  source: z.string().min(1, { message: "where the adapter comes from: a URL, hf://org/name, or a local path" }),
  scale: z.number().positive().optional(),
});

export const externalSchema = z.strictObject({
  base_url: z.url({ message: "the provider's base URL, such as https://api.openai.com/v1" }),
  api_key_env: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/, { message: "the name of an environment variable on the server, such as OPENAI_API_KEY" })
    .optional(),
  model: z.string().optional(),
});

export const modelEntrySchema = z.strictObject({
  name: modelNameSchema,
  origin: z.string().optional(),
  context: wholeNumber("a whole number of tokens one request may use", 1).optional(),
  max_output: wholeNumber("a whole number of tokens one answer may produce", 1).optional(),
  class: z.enum(modelClasses, { message: `one of ${modelClasses.join(", ")}` }).optional(),
  scaling: scalingSchema.optional(),
  target: z.strictObject({ in_flight: wholeNumber("a whole number of requests in flight per replica", 1) }).optional(),
  fallbacks: z.array(modelNameSchema).optional(),
  aliases: z.array(modelNameSchema).optional(),
  owner: z.string().min(1, { message: "an owner name (a team or a person)" }).optional(),
  adapters: z.array(adapterSchema).optional(),
  profiles: z.array(profileSchema).optional(),
  external: externalSchema.optional(),
});
export type ModelEntry = z.infer<typeof modelEntrySchema>;

export const serverConfigSchema = z.strictObject({
  listen: z.string().optional(),
  data_dir: z.string().optional(),
  database: z.string().optional(),
  /** The share of each card an engine may use; the planner reserves the rest once (SPEC S2). */
  gpu_memory_utilization: z.number().gt(0).max(1).optional(),
  huggingface: z
    .strictObject({
      endpoint: z.url().optional(),
      token_env: z.string().optional(),
    })
    .optional(),
  nodes: z
    .strictObject({
      heartbeat_deadline: durationSchema.optional(),
      settling_window: durationSchema.optional(),
    })
    .optional(),
  /** How the reconciler paces itself; every key has a default. */
  reconcile: z
    .strictObject({
      interval: durationSchema.optional(),
      lease: durationSchema.optional(),
      backoff_initial: durationSchema.optional(),
      backoff_max: durationSchema.optional(),
      scale_down_cooldown: durationSchema.optional(),
      withdraw_delay: durationSchema.optional(),
      events_kept: wholeNumber("a whole number of events", 100).optional(),
    })
    .optional(),
  models: z.array(modelEntrySchema).optional(),
});
export type ServerConfigInput = z.infer<typeof serverConfigSchema>;
