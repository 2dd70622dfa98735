import type { Logger } from "pino";
import { request } from "undici";
import { DomainError } from "../../errors/domain-error.js";
import { runtimeAdapterEndpoints } from "../../engines/runtime-adapters.js";
import type { Replica } from "./replica-record.js";

export type AdapterChange = { readonly action: "load"; readonly adapter: { readonly name: string; readonly source: string } } | { readonly action: "unload"; readonly name: string };

export interface AdapterChangeContext {
  readonly nodeName: string;
  /** Where the agent reaches its own engines. */
  readonly probeHost: string;
  /** Fetches an adapter's source into the weights cache, as at start, and answers its path. */
  readonly fetchSource: (source: string) => Promise<string>;
  readonly logger: Logger;
}

/**
 * Loads an adapter into a ready replica's running engine (fetched into the
 * weights cache first, as at start), or unloads one, through the engine's
 * own runtime endpoint. The engine's refusal is passed on with its words.
 */
export async function changeEngineAdapter(replica: Replica, change: AdapterChange, apiKey: string | undefined, context: AdapterChangeContext): Promise<void> {
  const id = replica.spec.id;
  const { nodeName } = context;
  const name = change.action === "load" ? change.adapter.name : change.name;
  if (replica.state !== "ready" || replica.port === undefined) {
    throw new DomainError("replica_conflict", `replica ${id} on node ${nodeName} is ${replica.state}, not ready: adapter ${name} cannot be changed in its engine`, "Wait until it is ready, or restart the model so its new replicas start with the adapter.");
  }
  const endpoints = runtimeAdapterEndpoints(replica.spec.engine);
  // Asked before anything is fetched: an engine without runtime loading is refused at once.
  if (endpoints === undefined) {
    throw new DomainError("adapter_load_failed", `replica ${id} runs ${replica.spec.engine}, which loads adapters only at start`, "Restart the model's replicas so they start with the adapters of the catalog.");
  }
  const call = change.action === "load" ? endpoints.load(name, await context.fetchSource(change.adapter.source)) : endpoints.unload(name);
  const key = apiKey ?? replica.spec.api_key;
  let answer: { status: number; text: string };
  try {
    const response = await request(`http://${context.probeHost}:${replica.port}${call.path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify(call.body),
      // Loading reads the adapter's weights into the cards' memory: seconds for a large one.
      headersTimeout: 120_000,
      bodyTimeout: 120_000,
    });
    answer = { status: response.statusCode, text: await response.body.text() };
  } catch (error) {
    throw new DomainError("adapter_load_failed", `replica ${id} on node ${nodeName}: its engine did not answer the ${change.action} of adapter ${name} (${(error as Error).message})`, "See the replica's log (`llmgw ctl logs`).");
  }
  if (answer.status >= 300) {
    throw new DomainError(
      "adapter_load_failed",
      `replica ${id} on node ${nodeName}: its ${replica.spec.engine} engine refused to ${change.action} adapter ${name} (${answer.status}: ${answer.text.slice(0, 300)})`,
      "See the replica's log (`llmgw ctl logs`); for vLLM, check that the adapter's rank is within --max-lora-rank.",
    );
  }
  context.logger.info({ replica: id, adapter: name }, change.action === "load" ? "adapter-loaded" : "adapter-unloaded");
}
