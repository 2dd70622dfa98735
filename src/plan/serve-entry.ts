import { type ModelClass, type ModelEntry, type ProfileInput, parseWeightsSource } from "../catalog/index.js";
import type { Plan, PlanCandidate } from "./candidates.js";

const GiB = 1024 ** 3;

/** What `ctl model serve` was asked for, beside the source's plan. */
export interface ServeRequest {
  readonly source: string;
  readonly name?: string | undefined;
  /** The context asked for; the plan was made with it, so a fitting candidate holds it. */
  readonly context?: number | undefined;
  readonly class?: ModelClass | undefined;
  /** Scaling min 0: nothing runs until a request comes. */
  readonly onDemand?: boolean | undefined;
}

export type ServeChoice =
  | { readonly fits: true; readonly entry: ModelEntry; readonly candidate: PlanCandidate }
  | { readonly fits: false; readonly why: string };

/**
 * The model entry `ctl model serve` adds: the plan's best candidate that fits
 * with the weights as given. The candidates come best first (fewest cards,
 * highest precision, vLLM before llama.cpp); one that `requires` other files
 * (a GGUF of a safetensors model, an int4 checkpoint) is passed over, since
 * the source named could not serve it. Pure: the CLI plans and adds.
 */
export function chooseServeEntry(plan: Plan, request: ServeRequest): ServeChoice {
  if (plan.candidates.length === 0) return { fits: false, why: "no nodes have joined the server, so nothing can run it" };
  const candidate = plan.candidates.find((each) => each.fits && each.requires === undefined);
  if (!candidate) {
    const needsOtherFiles = plan.candidates.find((each) => each.fits);
    return {
      fits: false,
      why: needsOtherFiles
        ? `nothing in the fleet runs it from these weights; it would fit with ${needsOtherFiles.requires}`
        : "no candidate fits the live fleet (each one's shortfall is in the table)",
    };
  }
  const context = request.context ?? roundedContext(candidate.max_context);
  const entry: ModelEntry = {
    name: request.name ?? defaultModelName(request.source),
    context,
    ...(request.class !== undefined ? { class: request.class } : {}),
    ...(request.onDemand ? { scaling: { min: 0 } } : {}),
    profiles: [profileFor(candidate, request.source, context)],
  };
  return { fits: true, entry, candidate };
}

function profileFor(candidate: PlanCandidate, source: string, context: number): ProfileInput {
  if (candidate.gpus === 0) {
    // A CPU replica reserves the host memory the plan priced: weights, the runtime, and the KV cache of one full context.
    const bytes = candidate.weights_bytes_per_card + candidate.overhead_bytes_per_card + candidate.kv_bytes_per_token * context;
    return { engine: candidate.engine, source, quantization: candidate.quantization, gpus: 0, memory_gb: Math.ceil(bytes / GiB) };
  }
  return { engine: candidate.engine, source, gpu_class: candidate.pool.gpu_class, gpus: candidate.gpus, quantization: candidate.quantization };
}

/** The largest context that fits, in whole thousands (k = 1024) when it is that long, as a person would write it in the file. */
function roundedContext(tokens: number): number {
  return tokens >= 1024 ? Math.floor(tokens / 1024) * 1024 : tokens;
}

/**
 * A model name from its source: the repository's name for a hub id, else the
 * last part of the path or URL (a .gguf file without its extension and its
 * "-00001-of-00003" part number), in lower case.
 */
export function defaultModelName(source: string): string {
  // The stand-in mirror only lets `mirror:path` parse: the name comes from the path, not the mirror.
  const parsed = parseWeightsSource(source.trim(), { mirror: "https://mirror.invalid/" });
  const raw =
    parsed.kind === "hub"
      ? (parsed.repo.split("/")[1] ?? parsed.repo)
      : (((parsed.kind === "local" ? parsed.path : new URL(parsed.url).pathname).split("/").filter((part) => part.length > 0).pop() ?? "model"));
  const name = decodeURIComponentSafely(raw)
    .replace(/\.gguf$/i, "")
    .replace(/-\d{5}-of-\d{5}$/, "")
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "");
  return name.slice(0, 128) || "model";
}

function decodeURIComponentSafely(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
