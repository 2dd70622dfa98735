import type { EngineName } from "../catalog/index.js";

/**
 * The OpenAI-style routes beyond chat, completions and embeddings, and the
 * engines that serve each, as their servers mount them:
 * - /v1/responses (OpenAI's Responses API): vLLM and SGLang;
 * - /v1/rerank (query + documents, Jina's and Cohere's shape): vLLM, SGLang,
 *   and llama-server started with --reranking;
 * - /v1/score (text_1 + text_2 pairs): vLLM only (SGLang's /v1/score is
 *   another API, of token probabilities).
 * TensorRT-LLM's trtllm-serve and ComfyUI serve none of them. The gateway
 * translates a Responses request for an engine without the route to a chat
 * completion, refuses the other routes where the model's engine does not
 * serve them before sending anything, and the simulated engine serves
 * exactly what the engine it stands in for does.
 *
 * Anthropic's /v1/messages is served by vLLM (0.10 on) and llama-server, not
 * by llmgw's built-in llama.cpp engine (which the engine's name does not tell
 * apart from llama-server), SGLang's releases alike or TensorRT-LLM: whether
 * a replica serves it is the routing table's, per replica
 * (`serves_messages`, from replicaServesMessages). The gateway passes it
 * through where every replica a request may reach serves it, and translates
 * it to a chat completion everywhere else.
 */
export const extraRoutes = ["responses", "rerank", "score", "messages"] as const;
export type ExtraRoute = (typeof extraRoutes)[number];

const servedBy: Readonly<Record<ExtraRoute, readonly EngineName[]>> = {
  responses: ["vllm", "sglang"],
  rerank: ["vllm", "sglang", "llamacpp"],
  score: ["vllm"],
  // llama-server's, not the built-in engine's: routing reads serves_messages per replica.
  messages: ["vllm", "llamacpp"],
};

/**
 * Whether a replica's engine serves Anthropic's /v1/messages itself: vLLM
 * (the simulated engine serves it as vLLM too), and llama.cpp where the node
 * runs llama-server; llmgw's built-in llama.cpp engine, a simulated llama.cpp
 * (which stands in for the built-in one too) and every other engine do not.
 */
export function replicaServesMessages(engine: string, llamaCpp: { readonly kind: "llama-server" | "built-in" } | null | undefined): boolean {
  if (engine === "vllm") return true;
  return engine === "llamacpp" && llamaCpp?.kind === "llama-server";
}

export function engineServes(engine: EngineName, route: ExtraRoute): boolean {
  return servedBy[route].includes(engine);
}

/** The engines that serve `route`, for a refusal that says where it would be served. */
export function enginesServing(route: ExtraRoute): readonly EngineName[] {
  return servedBy[route];
}

/** A text engine started to pool rather than generate: the flag that says so and the routes it then serves. */
export interface PoolingRunner {
  /** The argument that makes it a pooling engine, as written: `--runner pooling`, `--embedding`. */
  readonly flag: string;
  /** The /v1 routes it serves (without /v1/), in the order a refusal names them. */
  readonly routes: readonly string[];
}

// vLLM's pooling tasks (--task, before --runner replaced it) and what --convert turns a checkpoint into.
const vllmPoolingTasks = new Set(["embed", "embedding", "classify", "score", "reward"]);
const vllmConversions = new Set(["embed", "classify", "reward"]);

/** The value of `--name VALUE` or `--name=VALUE`, the last one given (a later flag overrides an earlier one). */
function flagValue(args: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (const [index, arg] of args.entries()) {
    if (arg === name) value = args[index + 1];
    else if (arg.startsWith(`${name}=`)) value = arg.slice(name.length + 1);
  }
  return value;
}

/**
 * Whether a text engine started with these arguments pools (embeddings,
 * reranking, scores) instead of generating, as the engines themselves
 * decide it: vLLM with `--runner pooling` (or the older `--task embed`,
 * `score`, ...; or `--convert embed|classify|reward`), SGLang with
 * `--is-embedding`, llama-server with `--embedding` or `--reranking`. Such
 * an engine answers no chat, completions or Responses request: vLLM "does
 * not support Chat Completions API", llama-server 501. Undefined for an
 * engine that generates. Pure.
 */
export function poolingRunner(engine: EngineName, args: readonly string[]): PoolingRunner | undefined {
  switch (engine) {
    case "vllm": {
      const runner = flagValue(args, "--runner");
      if (runner === "pooling") return { flag: "--runner pooling", routes: ["embeddings", "rerank", "score"] };
      if (runner !== undefined) return undefined;
      const task = flagValue(args, "--task");
      if (task !== undefined && vllmPoolingTasks.has(task)) return { flag: `--task ${task}`, routes: ["embeddings", "rerank", "score"] };
      const convert = flagValue(args, "--convert");
      if (convert !== undefined && vllmConversions.has(convert)) return { flag: `--convert ${convert}`, routes: ["embeddings", "rerank", "score"] };
      return undefined;
    }
    case "sglang":
      return args.includes("--is-embedding") ? { flag: "--is-embedding", routes: ["embeddings", "rerank"] } : undefined;
    case "llamacpp": {
      // --reranking pools by rank, which llama-server serves at /v1/rerank alone (its embeddings route refuses rank pooling).
      const reranking = args.find((arg) => arg === "--reranking" || arg === "--rerank");
      if (reranking !== undefined) return { flag: reranking, routes: ["rerank"] };
      const embedding = args.find((arg) => arg === "--embedding" || arg === "--embeddings");
      return embedding !== undefined ? { flag: embedding, routes: ["embeddings"] } : undefined;
    }
    default:
      return undefined;
  }
}
