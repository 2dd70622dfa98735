import type { EngineName } from "../../catalog/index.js";
import { EngineArgumentsInvalid } from "../../errors/for-engines.js";
import { comfyuiModelNameVariable } from "../drivers/comfyui.js";

/** What the simulated engine needs to know, read from the command line a real engine would get. */
export interface SimEngineArguments {
  readonly engine: EngineName;
  readonly port: number;
  readonly modelName: string;
  readonly weightsPath: string;
  /** Tokens one request may use; undefined when the command line leaves it to the engine. */
  readonly context: number | undefined;
  /** Cards the engine spreads over (tensor parallel size; llama.cpp's split); 0 on the CPU. */
  readonly cardCount: number;
  /** Requests served at once; more wait in a queue. */
  readonly concurrency: number;
  readonly adapters: readonly { readonly name: string; readonly path: string; readonly scale?: number }[];
}

/**
 * Concurrency when the command line does not say: vLLM's and SGLang's
 * default batch ceilings are of this order, and the simulation only needs
 * "many" for them (llama.cpp and ComfyUI are told, or serve one at a time).
 */
const defaultBatchConcurrency = 256;

export type FlagKind = "value" | "list" | "switch";

export interface FlagSpec {
  readonly names: readonly string[];
  readonly kind: FlagKind;
}

/**
 * The command line split into flags and positionals the way argparse would
 * see it: `--flag value`, `--flag=value`, lists up to the next flag, and a
 * later flag replacing an earlier one (which is how the profile's extra
 * arguments, placed last, override generated ones). A flag we do not know
 * takes the next token as its value when that token is not a flag.
 */
export function splitArguments(argv: readonly string[], specs: Record<string, FlagSpec>): { flags: Map<string, string[]>; positionals: string[] } {
  const byName = new Map<string, [string, FlagSpec]>();
  for (const [key, spec] of Object.entries(specs)) for (const name of spec.names) byName.set(name, [key, spec]);
  const flags = new Map<string, string[]>();
  const positionals: string[] = [];
  let index = 0;
  while (index < argv.length) {
    const token = argv[index] ?? "";
    index += 1;
    if (!token.startsWith("-") || token === "-") {
      positionals.push(token);
      continue;
    }
    const equals = token.indexOf("=");
    const name = equals > 0 ? token.slice(0, equals) : token;
    const inlineValue = equals > 0 ? token.slice(equals + 1) : undefined;
    const known = byName.get(name);
    const isValue = (candidate: string | undefined): candidate is string => candidate !== undefined && !candidate.startsWith("--");
    if (known === undefined) {
      if (inlineValue === undefined && isValue(argv[index]) && !(argv[index] ?? "").startsWith("-")) index += 1;
      continue;
    }
    const [key, spec] = known;
    const values: string[] = [];
    if (inlineValue !== undefined) values.push(inlineValue);
    else if (spec.kind === "value" && isValue(argv[index])) values.push(argv[index++] ?? "");
    else if (spec.kind === "list") {
      while (isValue(argv[index])) values.push(argv[index++] ?? "");
    }
    // Repeated --lora and --lora-scaled add adapters; any other flag given again replaces itself.
    const accumulates = key === "lora" || key === "loraScaled";
    flags.set(key, accumulates ? [...(flags.get(key) ?? []), ...values] : values);
  }
  return { flags, positionals };
}

function wholeNumber(engine: EngineName, flag: string, text: string | undefined, minimum: number): number {
  const value = Number(text);
  if (text === undefined || text.trim() === "" || !Number.isInteger(value) || value < minimum) {
    throw new EngineArgumentsInvalid(engine, `${flag} needs a whole number of ${minimum} or more, got ${JSON.stringify(text ?? null)}`);
  }
  return value;
}

function optionalWholeNumber(engine: EngineName, flag: string, values: string[] | undefined, minimum: number): number | undefined {
  return values === undefined ? undefined : wholeNumber(engine, flag, values[0], minimum);
}

/** `NAME=PATH`, a bare PATH (named after its folder or file), or vLLM/SGLang's JSON form. */
function namedAdapter(text: string): { name: string; path: string } {
  if (text.startsWith("{")) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === "object" && parsed !== null) {
        const record = parsed as Record<string, unknown>;
        const name = record["name"] ?? record["lora_name"];
        const path = record["path"] ?? record["lora_path"];
        if (typeof name === "string" && typeof path === "string") return { name, path };
      }
    } catch {
      // Not JSON after all: read it as a path below.
    }
  }
  const equals = text.indexOf("=");
  if (equals > 0) return { name: text.slice(0, equals), path: text.slice(equals + 1) };
  return { name: adapterNameFromPath(text), path: text };
}

/** llama-server names no adapters; the simulation names each after its file, without .gguf. */
export function adapterNameFromPath(path: string): string {
  const base = path.replace(/\/+$/, "").split("/").pop() ?? path;
  return base.replace(/\.gguf$/i, "");
}

function requirePort(engine: EngineName, flags: Map<string, string[]>): number {
  const values = flags.get("port");
  if (values === undefined) throw new EngineArgumentsInvalid(engine, "--port is missing; every driver gives one");
  return wholeNumber(engine, "--port", values[0], 0);
}

const common = {
  port: { names: ["--port"], kind: "value" },
  host: { names: ["--host"], kind: "value" },
} satisfies Record<string, FlagSpec>;

/**
 * Reads port, served name, context, cards, concurrency and adapters from the
 * argv a driver built for `engine`, without argv[0] (the agent runs
 * `llmgw sim-engine --engine ENGINE -- ARGV...`). `environment` is the
 * engine's environment: ComfyUI's model name travels there, not in argv.
 */
export function parseEngineArgv(
  engine: EngineName,
  argv: readonly string[],
  environment: Readonly<Record<string, string | undefined>> = {},
): SimEngineArguments {
  switch (engine) {
    case "vllm": {
      const { flags, positionals } = splitArguments(argv, {
        ...common,
        model: { names: ["--model"], kind: "value" },
        servedModelName: { names: ["--served-model-name"], kind: "list" },
        tensorParallel: { names: ["--tensor-parallel-size", "-tp"], kind: "value" },
        context: { names: ["--max-model-len"], kind: "value" },
        concurrency: { names: ["--max-num-seqs"], kind: "value" },
        loraModules: { names: ["--lora-modules"], kind: "list" },
      });
      // `vllm serve PATH` (the driver's form) or `vllm serve --model PATH`.
      const weightsPath = (positionals[0] === "serve" ? positionals[1] : positionals[0]) ?? flags.get("model")?.[0];
      if (weightsPath === undefined) throw new EngineArgumentsInvalid(engine, "no model path after `serve`");
      return {
        engine,
        port: requirePort(engine, flags),
        weightsPath,
        modelName: flags.get("servedModelName")?.[0] ?? weightsPath,
        context: optionalWholeNumber(engine, "--max-model-len", flags.get("context"), 1),
        cardCount: optionalWholeNumber(engine, "--tensor-parallel-size", flags.get("tensorParallel"), 1) ?? 1,
        concurrency: optionalWholeNumber(engine, "--max-num-seqs", flags.get("concurrency"), 1) ?? defaultBatchConcurrency,
        adapters: (flags.get("loraModules") ?? []).map(namedAdapter),
      };
    }
    case "sglang": {
      const { flags } = splitArguments(argv, {
        ...common,
        model: { names: ["--model-path", "--model"], kind: "value" },
        servedModelName: { names: ["--served-model-name"], kind: "value" },
        tensorParallel: { names: ["--tp-size", "--tp", "--tensor-parallel-size"], kind: "value" },
        context: { names: ["--context-length"], kind: "value" },
        concurrency: { names: ["--max-running-requests"], kind: "value" },
        loraPaths: { names: ["--lora-paths"], kind: "list" },
      });
      const weightsPath = flags.get("model")?.[0];
      if (weightsPath === undefined) throw new EngineArgumentsInvalid(engine, "--model-path is missing");
      return {
        engine,
        port: requirePort(engine, flags),
        weightsPath,
        modelName: flags.get("servedModelName")?.[0] ?? weightsPath,
        context: optionalWholeNumber(engine, "--context-length", flags.get("context"), 1),
        cardCount: optionalWholeNumber(engine, "--tp-size", flags.get("tensorParallel"), 1) ?? 1,
        concurrency: optionalWholeNumber(engine, "--max-running-requests", flags.get("concurrency"), 1) ?? defaultBatchConcurrency,
        adapters: (flags.get("loraPaths") ?? []).map(namedAdapter),
      };
    }
    case "trtllm": {
      const { flags, positionals } = splitArguments(argv, {
        ...common,
        servedModelName: { names: ["--served_model_name"], kind: "value" },
        tensorParallel: { names: ["--tp_size"], kind: "value" },
        context: { names: ["--max_seq_len"], kind: "value" },
        concurrency: { names: ["--max_batch_size"], kind: "value" },
      });
      const weightsPath = positionals[0];
      if (weightsPath === undefined) throw new EngineArgumentsInvalid(engine, "no model path");
      return {
        engine,
        port: requirePort(engine, flags),
        weightsPath,
        modelName: flags.get("servedModelName")?.[0] ?? weightsPath,
        context: optionalWholeNumber(engine, "--max_seq_len", flags.get("context"), 1),
        cardCount: optionalWholeNumber(engine, "--tp_size", flags.get("tensorParallel"), 1) ?? 1,
        concurrency: optionalWholeNumber(engine, "--max_batch_size", flags.get("concurrency"), 1) ?? defaultBatchConcurrency,
        adapters: [],
      };
    }
    case "llamacpp": {
      const { flags } = splitArguments(argv, {
        ...common,
        model: { names: ["--model", "-m"], kind: "value" },
        alias: { names: ["--alias", "-a"], kind: "value" },
        contextSize: { names: ["--ctx-size", "-c"], kind: "value" },
        parallel: { names: ["--parallel", "-np"], kind: "value" },
        gpuLayers: { names: ["--n-gpu-layers", "-ngl", "--gpu-layers"], kind: "value" },
        tensorSplit: { names: ["--tensor-split", "-ts"], kind: "value" },
        lora: { names: ["--lora"], kind: "value" },
        loraScaled: { names: ["--lora-scaled"], kind: "value" },
      });
      const weightsPath = flags.get("model")?.[0];
      if (weightsPath === undefined) throw new EngineArgumentsInvalid(engine, "--model is missing");
      const slots = optionalWholeNumber(engine, "--parallel", flags.get("parallel"), 1) ?? 1;
      const contextSize = optionalWholeNumber(engine, "--ctx-size", flags.get("contextSize"), 0);
      const gpuLayers = optionalWholeNumber(engine, "--n-gpu-layers", flags.get("gpuLayers"), -1) ?? 0;
      const splitShares = flags.get("tensorSplit")?.[0]?.split(",").filter((share) => share.trim() !== "").length ?? 0;
      const adapters: { name: string; path: string; scale?: number }[] = [];
      for (const path of (flags.get("lora") ?? []).flatMap((value) => value.split(","))) {
        adapters.push({ name: adapterNameFromPath(path), path });
      }
      // llama-server's own form: --lora-scaled FNAME:SCALE[,FNAME:SCALE...], one argument.
      for (const item of (flags.get("loraScaled") ?? []).flatMap((value) => value.split(","))) {
        const separator = item.lastIndexOf(":");
        const path = separator > 0 ? item.slice(0, separator) : item;
        const scale = separator > 0 ? Number(item.slice(separator + 1)) : Number.NaN;
        if (!Number.isFinite(scale)) throw new EngineArgumentsInvalid(engine, `--lora-scaled "${item}" is not FNAME:SCALE (llama-server's form, e.g. /a/legal.gguf:0.5)`);
        adapters.push({ name: adapterNameFromPath(path), path, scale });
      }
      return {
        engine,
        port: requirePort(engine, flags),
        weightsPath,
        modelName: flags.get("alias")?.[0] ?? weightsPath,
        // --ctx-size is shared by the slots; 0 means the model's own, which we do not know.
        context: contextSize === undefined || contextSize === 0 ? undefined : Math.floor(contextSize / slots),
        cardCount: gpuLayers === 0 ? 0 : Math.max(1, splitShares),
        concurrency: slots,
        adapters,
      };
    }
    case "comfyui": {
      const { flags, positionals } = splitArguments(argv, {
        ...common,
        listen: { names: ["--listen"], kind: "value" },
        cpu: { names: ["--cpu"], kind: "switch" },
      });
      return {
        engine,
        port: requirePort(engine, flags),
        weightsPath: positionals[0] ?? "main.py",
        modelName: environment[comfyuiModelNameVariable] ?? "comfyui",
        context: undefined,
        cardCount: flags.has("cpu") ? 0 : 1,
        // ComfyUI runs one prompt at a time and queues the rest.
        concurrency: 1,
        adapters: [],
      };
    }
  }
}
