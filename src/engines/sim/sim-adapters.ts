import type { FastifyInstance, FastifyReply } from "fastify";
import { describeIssues } from "../../catalog/schema-errors.js";
import { errorBody } from "../openai-server/openai-error-body.js";
import { loadAdapterRequestSchema, unloadAdapterRequestSchema } from "./sim-admin-schemas.js";

export interface ServedAdapter {
  readonly name: string;
  readonly path: string;
  readonly scale?: number;
}

/** The adapters a simulated engine serves now: those of the command line, plus those loaded at runtime, minus those unloaded. */
export class ServedAdapters {
  readonly #list: ServedAdapter[];

  constructor(
    readonly modelName: string,
    initial: readonly ServedAdapter[],
  ) {
    this.#list = [...initial];
  }

  get all(): readonly ServedAdapter[] {
    return this.#list;
  }

  /** Resolves the requested name to the base model or one of its adapters (by name, or SGLang's BASE:ADAPTER). */
  resolve(name: string): { kind: "base" } | { kind: "adapter"; name: string } | undefined {
    if (name === this.modelName) return { kind: "base" };
    const prefix = `${this.modelName}:`;
    const adapterName = name.startsWith(prefix) ? name.slice(prefix.length) : name;
    const adapter = this.#list.find((candidate) => candidate.name === adapterName);
    return adapter === undefined ? undefined : { kind: "adapter", name: adapter.name };
  }

  /**
   * Who answers, for the answer's text: the adapter the request chose in any
   * engine's way (model name, SGLang's lora_path, llama-server's lora list),
   * else the base model. Lets tests see that an adapter request reached it.
   */
  answeringName(body: { model: string; lora?: { id: number; scale: number }[] | null | undefined; lora_path?: string | null | undefined }): string {
    const resolved = this.resolve(body.model);
    if (resolved?.kind === "adapter") return resolved.name;
    const byPath = this.#list.find((adapter) => adapter.name === body.lora_path);
    if (byPath !== undefined) return byPath.name;
    const applied = body.lora?.find((selection) => selection.scale > 0);
    const byPosition = applied === undefined ? undefined : this.#list[applied.id];
    return byPosition?.name ?? this.modelName;
  }

  /** False when the name is taken, by the base model or an adapter. */
  add(adapter: ServedAdapter): boolean {
    if (adapter.name === this.modelName || this.#list.some((served) => served.name === adapter.name)) return false;
    this.#list.push(adapter);
    return true;
  }

  /** False when no adapter has the name. */
  remove(name: string): boolean {
    const index = this.#list.findIndex((adapter) => adapter.name === name);
    if (index < 0) return false;
    this.#list.splice(index, 1);
    return true;
  }
}

/**
 * Runtime LoRA loading as the engine it pretends to be answers it: vLLM
 * (under /v1) with plain text ("Success: …") and 400 for a name already
 * loaded or unknown; SGLang (at the root) with JSON { success, message }.
 */
export function registerAdapterRoutes(server: FastifyInstance, adapters: ServedAdapters, prefix: "/v1" | "", log: (line: string) => void): void {
  const answer = (reply: FastifyReply, status: number, message: string) =>
    prefix === "/v1"
      ? status === 200
        ? reply.type("text/plain").send(message)
        : reply.code(status).send(errorBody(status, "BadRequestError", message))
      : reply.code(status).send({ success: status === 200, message });
  server.post(`${prefix}/load_lora_adapter`, async (request, reply) => {
    const body = loadAdapterRequestSchema.safeParse(request.body);
    if (!body.success) return answer(reply, 400, `expected {"lora_name": ..., "lora_path": ...}: ${describeIssues(body.error.issues, "body")}`);
    const name = body.data.lora_name;
    if (!adapters.add({ name, path: body.data.lora_path })) return answer(reply, 400, `The lora adapter '${name}' has already been loaded.`);
    log(`POST ${prefix}/load_lora_adapter lora_name=${name} lora_path=${body.data.lora_path}`);
    return answer(reply, 200, `Success: LoRA adapter '${name}' added successfully.`);
  });
  server.post(`${prefix}/unload_lora_adapter`, async (request, reply) => {
    const body = unloadAdapterRequestSchema.safeParse(request.body);
    if (!body.success) return answer(reply, 400, `expected {"lora_name": ...}: ${describeIssues(body.error.issues, "body")}`);
    const name = body.data.lora_name;
    if (!adapters.remove(name)) return answer(reply, 404, `The lora adapter '${name}' cannot be found.`);
    log(`POST ${prefix}/unload_lora_adapter lora_name=${name}`);
    return answer(reply, 200, `Success: LoRA adapter '${name}' removed successfully.`);
  });
}
