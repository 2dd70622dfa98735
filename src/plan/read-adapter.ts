import { gguf } from "@huggingface/gguf";
import { resolve } from "node:path";
import { redactUrl } from "../catalog/index.js";
import { DomainError, isDomainError } from "../errors/light.js";
import { withUrlCredentials } from "../net/index.js";
import { ggufModelType } from "./gguf-architecture.js";
import { hubFiles, httpFolderFiles, isDirectory, isFile, localFolderFiles, type HubOptions, type ModelFiles } from "./model-files.js";

/**
 * What a LoRA adapter is, read from its own files before it is attached:
 * llama.cpp takes a GGUF LoRA (general.type "adapter", adapter.type "lora",
 * for one architecture); vLLM and SGLang take a PEFT folder
 * (adapter_config.json with peft_type LORA, its rank r and the base model it
 * was trained on). An adapter for another architecture or of another kind
 * loads as garbage or crashes the engine after the replica restarted, so it
 * is refused here instead.
 */
export type AdapterFacts =
  | { readonly format: "gguf-lora"; readonly modelType: string; readonly alpha: number | undefined }
  | { readonly format: "peft"; readonly rank: number; readonly baseModel: string | undefined; readonly targetModules: readonly string[] };

function adapterInvalid(source: string, why: string, hint: string): DomainError {
  return new DomainError("adapter_invalid", `adapter ${redactUrl(source)}: ${why}`, hint);
}

export async function readAdapter(source: string, options: HubOptions = {}): Promise<AdapterFacts> {
  const trimmed = source.trim();
  if (/\.gguf$/i.test(trimmed)) return readGgufAdapter(trimmed);
  return readPeftAdapter(trimmed, await adapterFiles(trimmed, options));
}

async function adapterFiles(source: string, options: HubOptions): Promise<ModelFiles> {
  if (/^https?:\/\//i.test(source)) return httpFolderFiles(source.endsWith("/") ? source : `${source}/`);
  if (await isDirectory(source)) return localFolderFiles(resolve(source));
  const hub = /^(?:hf:\/\/)?([A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*)(?:@([A-Za-z0-9._/-]+))?$/.exec(source);
  if (hub) return hubFiles(hub[1] as string, hub[2] ?? "main", options);
  throw adapterInvalid(source, "is not a .gguf file, a PEFT folder (local or a URL ending in /) or an HF id", "Give a GGUF LoRA for llama.cpp, or a PEFT adapter folder or HF id for vLLM and SGLang.");
}

async function readGgufAdapter(source: string): Promise<AdapterFacts> {
  const remote = /^https?:\/\//i.test(source);
  if (!remote && !(await isFile(source))) throw adapterInvalid(source, "no such file", "Give the path of a GGUF LoRA that exists on the server's machine, or its URL.");
  let metadata: Readonly<Record<string, unknown>>;
  try {
    const target = remote ? withUrlCredentials(source, {}) : { url: resolve(source), headers: {} };
    metadata = (await gguf(target.url, { allowLocalFile: !remote, additionalFetchHeaders: target.headers })).metadata as unknown as Readonly<Record<string, unknown>>;
  } catch (error) {
    if (isDomainError(error)) throw error;
    throw adapterInvalid(source, `is not a readable GGUF file (${error instanceof Error ? error.message : String(error)})`, "Convert the adapter with llama.cpp's convert_lora_to_gguf.py.");
  }
  const type = metadata["general.type"];
  const adapterType = metadata["adapter.type"];
  if (type !== "adapter" || adapterType !== "lora") {
    throw adapterInvalid(
      source,
      `is a GGUF ${typeof type === "string" ? type : "model"}${typeof adapterType === "string" ? ` (adapter.type ${adapterType})` : ""}, not a LoRA adapter`,
      "Give a GGUF LoRA (general.type adapter, adapter.type lora), as llama.cpp's convert_lora_to_gguf.py writes; a model GGUF is a model, not an adapter.",
    );
  }
  const architecture = metadata["general.architecture"];
  if (typeof architecture !== "string") throw adapterInvalid(source, "has no general.architecture", "Convert the adapter again with llama.cpp's convert_lora_to_gguf.py.");
  const alpha = metadata["adapter.lora.alpha"];
  return { format: "gguf-lora", modelType: ggufModelType(architecture), alpha: typeof alpha === "number" ? alpha : undefined };
}

async function readPeftAdapter(source: string, files: ModelFiles): Promise<AdapterFacts> {
  const text = await files.readText("adapter_config.json");
  if (text === undefined) throw adapterInvalid(source, `has no adapter_config.json (${files.description})`, "Give the folder PEFT saved the adapter into (it holds adapter_config.json and adapter_model.safetensors).");
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch {
    throw adapterInvalid(source, "adapter_config.json is not JSON", "Check the file; a mirror may have served an error page instead.");
  }
  const record = (typeof config === "object" && config !== null ? config : {}) as { peft_type?: unknown; r?: unknown; base_model_name_or_path?: unknown; target_modules?: unknown };
  if (typeof record.peft_type === "string" && record.peft_type.toUpperCase() !== "LORA") {
    throw adapterInvalid(source, `is a PEFT ${record.peft_type} adapter, not LoRA`, "vLLM and SGLang serve LoRA adapters only.");
  }
  if (typeof record.r !== "number" || !Number.isInteger(record.r) || record.r < 1) {
    throw adapterInvalid(source, "adapter_config.json has no rank r (a whole number)", "Save the adapter with PEFT's save_pretrained, which writes r.");
  }
  const targetModules = Array.isArray(record.target_modules) ? record.target_modules.filter((module): module is string => typeof module === "string") : [];
  return { format: "peft", rank: record.r, baseModel: typeof record.base_model_name_or_path === "string" ? record.base_model_name_or_path : undefined, targetModules };
}

/** The base model as the adapter check needs it. */
export interface AdapterBase {
  readonly model: string;
  readonly engine: "vllm" | "sglang" | "llamacpp";
  /** transformers model_type of the base (config.json model_type, or the GGUF architecture mapped to it). */
  readonly modelType: string;
  /** The largest rank the engine was started for (vLLM --max-lora-rank, default 16; SGLang --max-lora-rank). */
  readonly maxLoraRank: number;
}

/** vLLM's --max-lora-rank default; SGLang sizes its buffers from the adapters it is given at start. */
export const defaultMaxLoraRank = 16;

/** Undefined when the adapter fits the base; otherwise the refusal, with the figures. */
export function adapterRefusal(source: string, adapter: AdapterFacts, base: AdapterBase): DomainError | undefined {
  if (base.engine === "llamacpp") {
    if (adapter.format !== "gguf-lora") {
      return adapterInvalid(source, `is a PEFT folder, but ${base.model} runs on llama.cpp, which takes a GGUF LoRA`, "Convert it with llama.cpp's convert_lora_to_gguf.py and give the .gguf file.");
    }
    if (adapter.modelType !== base.modelType) {
      return adapterInvalid(source, `is a LoRA for ${adapter.modelType}, but ${base.model} is a ${base.modelType} model`, `Give a LoRA trained on ${base.model}'s architecture (${base.modelType}).`);
    }
    return undefined;
  }
  if (adapter.format !== "peft") {
    return adapterInvalid(source, `is a GGUF LoRA, but ${base.model} runs on ${base.engine}, which takes a PEFT folder or an HF id`, "Give the PEFT adapter folder (adapter_config.json and adapter_model.safetensors).");
  }
  if (adapter.rank > base.maxLoraRank) {
    return adapterInvalid(
      source,
      `has rank ${adapter.rank}, above the ${base.maxLoraRank} that ${base.model}'s ${base.engine} engine is started for`,
      `Add --max-lora-rank ${adapter.rank} (or more) to the profile's args, or use an adapter of rank ${base.maxLoraRank} or less.`,
    );
  }
  return undefined;
}
