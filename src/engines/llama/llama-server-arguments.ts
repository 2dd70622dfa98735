import { z } from "zod";
import { DomainError } from "../../errors/light.js";

/**
 * llama-server's command line as llmgw's built-in llama.cpp engine reads it:
 * the llamacpp driver builds one argv, and whichever engine the node has
 * (llama-server or the built-in one) gets it unchanged. A flag the built-in
 * engine does not implement is refused by name, never silently ignored: an
 * operator's --flash-attn or --rope-scaling in a profile's args must not look
 * applied when it is not.
 */
export interface LlamaServerArguments {
  readonly model: string;
  readonly alias: string | undefined;
  readonly host: string;
  readonly port: number;
  /** The KV cache of all slots together, as llama-server's --ctx-size; undefined leaves the model's trained context per slot. */
  readonly contextSize: number | undefined;
  readonly parallel: number;
  readonly threads: number | undefined;
  readonly gpuLayers: number | undefined;
  readonly tensorSplit: readonly number[] | undefined;
  /** --split-mode: layer, the one the built-in engine has (llama.cpp's default over several cards). */
  readonly splitMode: "layer" | undefined;
  readonly adapters: readonly { readonly path: string; readonly scale: number }[];
  /** --lora-init-without-apply: every adapter starts at scale 0 and requests choose theirs. */
  readonly adaptersUnapplied: boolean;
  readonly apiKey: string | undefined;
  readonly embedding: boolean;
  /** --pooling: node-llama-cpp pools as the GGUF says, so one that differs is refused at load. */
  readonly pooling: "none" | "mean" | "cls" | "last" | "rank" | undefined;
  /** Requests that may wait for a slot beyond those running; more are answered 503. */
  readonly queueLimit: number;
}

type FlagKind = "value" | "switch" | "pair";

/** Each flag llama-server takes that this engine implements, under every name llama-server gives it. */
const flags: Readonly<Record<string, { readonly names: readonly string[]; readonly kind: FlagKind }>> = {
  model: { names: ["--model", "-m"], kind: "value" },
  alias: { names: ["--alias", "-a"], kind: "value" },
  host: { names: ["--host"], kind: "value" },
  port: { names: ["--port"], kind: "value" },
  contextSize: { names: ["--ctx-size", "-c"], kind: "value" },
  parallel: { names: ["--parallel", "-np"], kind: "value" },
  threads: { names: ["--threads", "-t"], kind: "value" },
  gpuLayers: { names: ["--n-gpu-layers", "-ngl", "--gpu-layers"], kind: "value" },
  splitMode: { names: ["--split-mode", "-sm"], kind: "value" },
  tensorSplit: { names: ["--tensor-split", "-ts"], kind: "value" },
  lora: { names: ["--lora"], kind: "value" },
  loraScaled: { names: ["--lora-scaled"], kind: "pair" },
  loraUnapplied: { names: ["--lora-init-without-apply"], kind: "switch" },
  apiKey: { names: ["--api-key"], kind: "value" },
  embedding: { names: ["--embedding", "--embeddings"], kind: "switch" },
  // /metrics is always served; the chat template is always the model's own (llama-server's --jinja).
  pooling: { names: ["--pooling"], kind: "value" },
  metrics: { names: ["--metrics"], kind: "switch" },
  jinja: { names: ["--jinja"], kind: "switch" },
};

const byName = new Map<string, string>(Object.entries(flags).flatMap(([key, spec]) => spec.names.map((name) => [name, key] as const)));

function queueLimit(text: string | undefined, slots: number): number {
  if (text === undefined || text === "") return defaultQueuePerSlot * slots;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new LlamaArgumentsInvalid(`LLMGW_LLAMA_QUEUE must be a whole number of 0 or more, got ${JSON.stringify(text)}`);
  return value;
}

const whole = (minimum: number) => z.coerce.number().int().min(minimum);

const parsedSchema = z.strictObject({
  model: z.string().min(1, "--model needs the path of a GGUF file"),
  alias: z.string().min(1).optional(),
  host: z.string().min(1).default("127.0.0.1"),
  port: whole(0).max(65535).default(8080),
  contextSize: whole(0).optional(),
  parallel: whole(1).max(256).default(1),
  threads: whole(1).max(1024).optional(),
  gpuLayers: z.coerce.number().int().optional(),
  // llama.cpp through node-llama-cpp splits a model over the visible cards by layer only.
  splitMode: z.enum(["layer"], { message: "the built-in engine splits over the cards by layer only; install llama-server on the node for another split mode" }).optional(),
  tensorSplit: z
    .string()
    .regex(/^\d+(\.\d+)?([,/]\d+(\.\d+)?)*$/, "--tensor-split takes proportions such as 1,1")
    .transform((text) => text.split(/[,/]/).map(Number))
    .optional(),
  // --lora and --lora-scaled in the order given: requests number adapters by it.
  lora: z.array(z.object({ path: z.string().min(1), scale: z.coerce.number().finite("--lora-scaled takes a number as its scale").optional() })).default([]),
  loraUnapplied: z.boolean().default(false),
  apiKey: z.string().min(1).optional(),
  embedding: z.boolean().default(false),
  pooling: z.enum(["none", "mean", "cls", "last", "rank"]).optional(),
  metrics: z.boolean().default(false),
  jinja: z.boolean().default(false),
});

export class LlamaArgumentsInvalid extends DomainError {
  constructor(message: string) {
    super(
      "config_invalid",
      `llmgw's built-in llama.cpp engine cannot run this command line: ${message}`,
      "Remove the flag from the profile's args, or install llama-server on the node (the agent then runs it instead).",
    );
  }
}

/**
 * llama-server's queue has no bound; this engine's holds this many requests
 * per slot before answering 503, so a flood is refused rather than piled up
 * in memory. LLMGW_LLAMA_QUEUE sets another bound.
 */
const defaultQueuePerSlot = 64;

/**
 * Reads llama-server's argv (without argv[0]); LLAMA_API_KEY stands for
 * --api-key as in llama-server, so the key stays out of `ps`.
 */
export function parseLlamaServerArguments(argv: readonly string[], environment: Readonly<Record<string, string | undefined>> = {}): LlamaServerArguments {
  const raw: Record<string, unknown> = {};
  let index = 0;
  while (index < argv.length) {
    const token = argv[index] ?? "";
    index += 1;
    const equals = token.startsWith("--") ? token.indexOf("=") : -1;
    const name = equals > 0 ? token.slice(0, equals) : token;
    const key = byName.get(name);
    if (key === undefined) {
      throw new LlamaArgumentsInvalid(token.startsWith("-") ? `it does not take ${name}` : `unexpected argument ${JSON.stringify(token)} (every value follows its flag)`);
    }
    const spec = flags[key] as { kind: FlagKind };
    const next = (): string => {
      if (equals > 0) return token.slice(equals + 1);
      const value = argv[index];
      if (value === undefined) throw new LlamaArgumentsInvalid(`${name} needs a value`);
      index += 1;
      return value;
    };
    if (spec.kind === "switch") {
      if (equals > 0) throw new LlamaArgumentsInvalid(`${name} takes no value`);
      raw[key] = true;
    } else if (spec.kind === "pair") {
      const file = next();
      const scale = argv[index];
      if (scale === undefined) throw new LlamaArgumentsInvalid(`${name} takes a file and a scale: ${name} FILE SCALE`);
      index += 1;
      raw.lora = [...((raw.lora as unknown[] | undefined) ?? []), { path: file, scale }];
    } else if (key === "lora") {
      raw.lora = [...((raw.lora as unknown[] | undefined) ?? []), { path: next() }];
    } else {
      // As in llama-server, a flag given again replaces itself: a profile's args, placed last, override.
      raw[key] = next();
    }
  }
  const parsed = parsedSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const flag = issue?.path[0] !== undefined ? flags[String(issue.path[0])]?.names[0] : undefined;
    throw new LlamaArgumentsInvalid(`${flag ?? "the command line"}: ${issue?.message ?? "unreadable"}`);
  }
  const values = parsed.data;
  const apiKey = values.apiKey ?? (environment.LLAMA_API_KEY === "" ? undefined : environment.LLAMA_API_KEY);
  const initialScale = values.loraUnapplied ? 0 : 1;
  return {
    model: values.model,
    alias: values.alias,
    host: values.host,
    port: values.port,
    contextSize: values.contextSize === 0 ? undefined : values.contextSize,
    parallel: values.parallel,
    threads: values.threads,
    gpuLayers: values.gpuLayers,
    tensorSplit: values.tensorSplit,
    splitMode: values.splitMode,
    adapters: values.lora.map((adapter) => ({ path: adapter.path, scale: values.loraUnapplied ? 0 : (adapter.scale ?? initialScale) })),
    adaptersUnapplied: values.loraUnapplied,
    apiKey,
    embedding: values.embedding,
    pooling: values.pooling,
    queueLimit: queueLimit(environment.LLMGW_LLAMA_QUEUE, values.parallel),
  };
}
