import { z } from "zod";
import { comfySchema } from "./comfy-schema.js";
import { boundedDurationSchema } from "./duration.js";
import { limitsSchema } from "./server-limits.js";

/**
 * The model entry. The same schema reads server.yaml entries, the
 * files given to `ctl model add -f` and the bodies of POST /api/v1/models, so
 * an entry moves between them by copy and paste. Objects are strict: an
 * unknown key is refused (and the nearest known key suggested) rather than
 * silently ignored, because a misspelt `gpu: 2` that is ignored runs the model
 * on one card.
 */

import { engineNames, modelClasses, usageSyncs, type EngineName } from "./names.js";
export { engineNames, modelClasses, usageSyncs, type EngineName, type ModelClass } from "./names.js";

/** Engines that only run on GPUs, with tensor parallelism over the cards of one node. */
export const gpuOnlyEngines: readonly EngineName[] = ["vllm", "sglang", "trtllm"];
/** Engines that use one card at most. */
export const singleCardEngines: readonly EngineName[] = ["comfyui"];
/** Engines whose own distributed runtime spans nodes as llmgw runs them (vLLM's and SGLang's multi-node flags). */
export const multiNodeEngines: readonly EngineName[] = ["vllm", "sglang"];
/** The most nodes one replica spans. */
export const maxNodesPerReplica = 8;

/**
 * What a GPU engine profile may name: a precision (bf16, fp16), a format the
 * checkpoint is already in (int8, int4, awq, gptq), or one of vLLM's
 * --quantization methods an operator may want by name.
 */
export const gpuQuantizations = ["bf16", "fp16", "fp8", "int8", "int4", "awq", "gptq", "awq_marlin", "gptq_marlin", "bitsandbytes", "compressed-tensors"] as const;

/** Engines whose drivers can attach LoRA adapters; the catalog refuses adapters on a model with a profile of any other. */
export const adapterEngines: readonly EngineName[] = ["vllm", "sglang", "llamacpp"];



const namePattern = /^[A-Za-z0-9][A-Za-z0-9._:\/-]{0,127}$/;
export const modelNameSchema = z
  .string()
  .regex(namePattern, { message: "a name of letters, digits and . _ : / - (at most 128, starting with a letter or digit)" });

/**
 * `what` reads as the expectation: "a whole number of cards" → "a whole number
 * of cards, 0 or more", or with a ceiling "…, 0 to 64 (why)". Ceilings are
 * values no machine or model reaches, so a typo (gpus: 80 for 8) is refused
 * here rather than by a node that never has the cards.
 */
const wholeNumber = (what: string, minimum: number, maximum?: { readonly value: number; readonly why: string }) => {
  const message = maximum ? `${what}, ${minimum} to ${maximum.value} (${maximum.why})` : `${what}, ${minimum} or more`;
  const base = z.number({ message }).int({ message }).min(minimum, { message });
  return maximum ? base.max(maximum.value, { message }) : base;
};

const positiveNumber = (what: string, maximum: number, why: string) => {
  const message = `${what}: a number greater than 0 and at most ${maximum} (${why})`;
  return z.number({ message }).positive({ message }).max(maximum, { message });
};

/** The most cards one replica may take: it never spans two machines, and no machine holds more. */
export const maxGpusPerReplica = 64;

// NUL cannot be passed to a process at all (spawn refuses the whole command), and other control
// characters in a name, URL or path are a paste gone wrong; values and args keep tab and newline,
// which a multi-line setting (a PEM certificate, a JSON argument) may need.
// eslint-disable-next-line no-control-regex -- control characters are what this finds, on purpose
const controlCharacters = /[\u0000-\u001f\u007f]/;
// eslint-disable-next-line no-control-regex -- control characters are what this finds, on purpose
const controlCharactersButWhiteSpace = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** One line of text with no control characters: URLs, paths, names. */
const lineText = (message: string) =>
  z.string().min(1, { message }).refine((value) => !controlCharacters.test(value), { message: `${message}; without control characters (NUL, newline, escape)` });

/** Text handed to a process (an env value, an argument): anything but NUL and the control characters no setting needs. */
const processText = (what: string) =>
  z.string().refine((value) => !controlCharactersButWhiteSpace.test(value), {
    message: `${what} cannot hold NUL or control characters other than tab and newline: the engine could not be started with it`,
  });

/** Environment variable names as a shell and every engine read them. */
const envNameSchema = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,254}$/, { message: "an environment variable name of letters, digits and _, not starting with a digit (no =, space or NUL)" });

export const profileSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: "a profile name of letters, digits and . _ -" }).optional(),
  engine: z.enum(engineNames, { message: `one of ${engineNames.join(", ")}` }),
  source: lineText("where the weights come from: a URL, hf://org/name@revision, or a local path"),
  gpu_class: z.string().regex(/^[a-z0-9._-]+$/, { message: "a GPU class in lower case, such as h100, a100, l40s, rtx4090" }).optional(),
  gpus: wholeNumber("a whole number of cards", 0, { value: maxGpusPerReplica, why: "these are cards per node, and no machine has more" }).optional(),
  /** Nodes one replica spans (vllm and sglang only), each giving `gpus` cards; 1 when not written. */
  nodes: wholeNumber("a whole number of nodes", 1, { value: maxNodesPerReplica, why: "past 8 nodes the network, not the cards, bounds a replica" }).optional(),
  quantization: lineText("a quantization such as bf16, fp8, awq or q4_k_m").optional(),
  memory_gb: positiveNumber("host memory in GB", 65_536, "64 TB, more than any machine").optional(),
  cpu_cores: positiveNumber("CPU cores", 4096, "more than any machine").optional(),
  slots: wholeNumber("a whole number of parallel request slots", 1, { value: 65_536, why: "more than any engine serves at once" }).optional(),
  args: z.array(processText("an argument")).optional(),
  env: z.record(envNameSchema, processText("an environment value")).optional(),
  /**
   * Secrets taken from the server's own environment by name: `{ HF_TOKEN: SERVER_HF_TOKEN }` sets the
   * engine's HF_TOKEN to the server's $SERVER_HF_TOKEN when the replica is started. Only the names are
   * in the catalog, the audit and the answers; the value never is.
   */
  secret_env: z.record(envNameSchema, envNameSchema).optional(),
  /** A ComfyUI profile's workflow, where requests fill it in, and the files and custom nodes it needs (engine comfyui only). */
  comfy: comfySchema.optional(),
});
export type ProfileInput = z.infer<typeof profileSchema>;

const maxReplicas = { value: 10_000, why: "more replicas than any fleet holds" };

export const scalingSchema = z.strictObject({
  min: wholeNumber("a whole number of replicas", 0, maxReplicas).optional(),
  max: wholeNumber("a whole number of replicas", 0, maxReplicas).optional(),
  idle_timeout: boundedDurationSchema(1000, 30 * 86_400_000, "how long an on-demand model may sit unused before it is stopped").optional(),
});

export const adapterSchema = z.strictObject({
  name: modelNameSchema,
  source: lineText("where the adapter comes from: a URL, hf://org/name, or a local path"),
  scale: z.number().positive().optional(),
});

export const externalSchema = z.strictObject({
  base_url: z.url({ message: "the provider's base URL, such as https://api.openai.com/v1" }),
  api_key_env: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/, { message: "the name of an environment variable on the server, such as OPENAI_API_KEY" })
    .optional(),
  model: lineText("the model name the provider knows").optional(),
});

/** 2^24 tokens: past every trained context (10M for the longest published models). */
const maxTokens = { value: 16_777_216, why: "longer than any model's context" };

export const modelEntrySchema = z.strictObject({
  name: modelNameSchema,
  origin: lineText("where the model comes from, such as hf://org/name@revision").optional(),
  context: wholeNumber("a whole number of tokens one request may use", 1, maxTokens).optional(),
  max_output: wholeNumber("a whole number of tokens one answer may produce", 1, maxTokens).optional(),
  class: z.enum(modelClasses, { message: `one of ${modelClasses.join(", ")}` }).optional(),
  scaling: scalingSchema.optional(),
  target: z.strictObject({ in_flight: wholeNumber("a whole number of requests in flight per replica", 1) }).optional(),
  fallbacks: z.array(modelNameSchema).optional(),
  aliases: z.array(modelNameSchema).optional(),
  owner: lineText("an owner name (a team or a person)").optional(),
  adapters: z.array(adapterSchema).optional(),
  profiles: z.array(profileSchema).optional(),
  external: externalSchema.optional(),
  /**
   * How the gateway picks a replica: `least` (fewest requests in flight, the
   * default), `prefix` (requests sharing a prompt's first characters go to the
   * same replica while it is not overloaded), or `cache` (the replica known to
   * hold the longest part of the prompt, weighed against its queue and cache
   * use: `gateway.cache_routing`).
   */
  routing: z
    .enum(["least", "prefix", "cache"], { message: "least (fewest in flight), prefix (same prompt start, same replica) or cache (where the prompt's prefix was sent, weighed against load)" })
    .optional(),
  /** How long a request waits for a ready replica (an on-demand model loading) before a 503; default 120s. */
  queue_timeout: boundedDurationSchema(1000, 3_600_000, "how long a request may wait for a replica of the model").optional(),
  /** The shipped preset this entry was added from (`ctl model add PRESET`); kept so the model and an export say where it came from. */
  preset: modelNameSchema.optional(),
});
export type ModelEntry = z.infer<typeof modelEntrySchema>;

/**
 * What an answer waits for in the usage journal (`gateway.usage_sync`, and
 * `llmgw gateway --usage-sync`): write (written; survives a crash of the
 * process, not of the machine), the default, or disk (written and synced).
 */
export const usageSyncSchema = z.enum(usageSyncs, { message: "write (each answer's usage written before it ends, not synced: a crash of the machine may lose the last seconds' usage) or disk (synced too)" });
export type UsageSync = z.infer<typeof usageSyncSchema>;

export const serverConfigSchema = z.strictObject({
  listen: z.string().optional(),
  data_dir: z.string().optional(),
  database: z.string().optional(),
  /** The share of each card an engine may use; the planner reserves the rest once. */
  gpu_memory_utilization: z.number().gt(0).max(1).optional(),
  huggingface: z
    .strictObject({
      endpoint: z.url().optional(),
      token_env: z.string().optional(),
    })
    .optional(),
  /** HTTPS for the API, the gateway and the console; paths are read relative to this file. */
  tls: z
    .strictObject({
      cert: z.string().min(1, { message: "the path of a PEM certificate file" }),
      key: z.string().min(1, { message: "the path of the certificate's PEM private key file" }),
    })
    .optional(),
  /** Where `mirror:path` sources point: an http(s) base URL the nodes reach, or a folder every node mounts. */
  mirror: z.string().min(1, { message: "an http(s) URL or a folder path" }).optional(),
  nodes: z
    .strictObject({
      // Agents beat every 2s: under 5s a node is lost on two late beats; over an hour a dead node's replicas wait that long to move.
      heartbeat_deadline: boundedDurationSchema(4000, 3_600_000, "how long a node may be silent before it is lost: at least two of the agents' 2s beats").optional(),
      // 0s is allowed (no settling); past an hour a restarted server would leave lost work unplaced that long.
      settling_window: boundedDurationSchema(0, 3_600_000, "how long a restarted server waits for agents before it acts").optional(),
      /** A private CA that signed the agents' control-API certificates, trusted besides the system's CAs. */
      ca: z.string().min(1, { message: "the path of a PEM CA certificate file" }).optional(),
    })
    .optional(),
  gateway: z
    .strictObject({
      /** keys: every /v1 request needs a gateway key; open: anyone who reaches the port (a loopback demo). */
      auth: z.enum(["keys", "open"], { message: "keys (gateway API keys) or open (no key; loopback demos only)" }).optional(),
      usage_sync: usageSyncSchema.optional(),
      /** The weights of `routing: cache` (score-replicas.ts says what each is worth); every key has a default. */
      cache_routing: z
        .strictObject({
          prefix_weight: z.number({ message: "a number: the worth of holding the whole prompt" }).min(0).max(1000).optional(),
          queue_weight: z.number({ message: "a number: the cost of each request in flight beyond the least busy replica's" }).min(0).max(1000).optional(),
          cache_weight: z.number({ message: "a number: the cost of a whole KV cache in use" }).min(0).max(1000).optional(),
          cache_full: z.number({ message: "a fraction from 0 to 1: the cache use from which a held prefix counts for nothing" }).min(0).max(1).optional(),
        })
        .optional(),
    })
    .optional(),
  /** How the reconciler paces itself; every key has a default. */
  reconcile: z
    .strictObject({
      interval: boundedDurationSchema(100, 3_600_000, "how often the reconciler looks again when nothing wakes it").optional(),
      lease: boundedDurationSchema(1000, 3_600_000, "how long a leader holds the reconciler's lease without renewing it").optional(),
      backoff_initial: boundedDurationSchema(100, 86_400_000, "the first wait before a failing engine is started again").optional(),
      backoff_max: boundedDurationSchema(100, 86_400_000, "the longest wait before a failing engine is started again").optional(),
      scale_down_cooldown: boundedDurationSchema(0, 86_400_000, "how long load must stay low before a replica is removed").optional(),
      withdraw_delay: boundedDurationSchema(0, 600_000, "how long a replica stays out of routing before its engine is told to drain").optional(),
      events_kept: wholeNumber("a whole number of events", 100, { value: 10_000_000, why: "more events than are worth keeping in the database" }).optional(),
    })
    .optional(),
  /** Limits against abuse on every port that carries the gateway; every key has a default (server-limits.ts). */
  limits: limitsSchema.optional(),
  models: z.array(modelEntrySchema).optional(),
});
export type ServerConfigInput = z.infer<typeof serverConfigSchema>;
