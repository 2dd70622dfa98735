import { sseEvent } from "../sse-events.js";
import { readChatChunk, type ChatUsage } from "../chat-answer.js";
import { outputText, responseObject, responsesUsage, type OutputItem } from "./responses-answer.js";
import type { ResponsesRequest } from "./responses-request.js";

type OpenItem = { kind: "text"; item: Extract<OutputItem, { type: "message" }> } | { kind: "call"; index: number; item: Extract<OutputItem, { type: "function_call" }> };

/**
 * A chat completion stream as the Responses API's events, as the engine's
 * arrive: response.created and response.in_progress with the first chunk;
 * a message item (added, its text part added, text deltas, text done, part
 * done, item done) for each run of text; a function_call item (added,
 * argument deltas, arguments done, item done) for each tool call; then
 * response.completed (or response.incomplete past max_output_tokens) with
 * the usage. Every event carries its sequence_number.
 */
export class ResponsesStream {
  #sequence = 0;
  #started = false;
  #finished = false;
  #open: OpenItem | undefined;
  readonly #output: OutputItem[] = [];
  #chatId: string | null | undefined;
  #created: number | null | undefined;
  #model: string;
  #length = false;
  #usage: ChatUsage | undefined;

  constructor(private readonly request: ResponsesRequest) {
    this.#model = request.model;
  }

  event(data: string): string {
    if (this.#finished) return "";
    const chunk = readChatChunk(data);
    if (chunk === "done") return this.#finish();
    if (chunk === undefined) return "";
    if (chunk.error) {
      this.#finished = true;
      return this.#emit("error", { code: chunk.error.code ?? "upstream_failed", message: chunk.error.message ?? "the engine failed mid-answer", param: null });
    }
    let out = "";
    if (!this.#started) {
      this.#started = true;
      this.#chatId = chunk.id;
      this.#created = chunk.created;
      this.#model = chunk.model ?? this.#model;
      out += this.#emit("response.created", { response: this.#response("in_progress") });
      out += this.#emit("response.in_progress", { response: this.#response("in_progress") });
    }
    if (chunk.usage) this.#usage = chunk.usage;
    const choice = chunk.choices?.find((candidate) => (candidate.index ?? 0) === 0);
    if (!choice) return out;
    const text = choice.delta?.content;
    if (typeof text === "string" && text.length > 0) {
      if (this.#open?.kind !== "text") {
        out += this.#close();
        const item: OpenItem & { kind: "text" } = { kind: "text", item: { type: "message", id: `msg_${this.#chatId ?? "llmgw"}_${this.#output.length}`, status: "in_progress", role: "assistant", content: [] } };
        out += this.#add(item);
        out += this.#emit("response.content_part.added", { item_id: item.item.id, output_index: this.#output.length, content_index: 0, part: outputText("") });
        item.item.content.push(outputText(""));
      }
      const open = this.#open as OpenItem & { kind: "text" };
      (open.item.content[0] as { text: string }).text += text;
      out += this.#emit("response.output_text.delta", { item_id: open.item.id, output_index: this.#output.length, content_index: 0, delta: text, logprobs: [] });
    }
    for (const call of choice.delta?.tool_calls ?? []) {
      const position = call.index ?? 0;
      const open = this.#open;
      if (open?.kind !== "call" || open.index !== position || (typeof call.id === "string" && call.id.length > 0 && call.id !== open.item.call_id)) {
        out += this.#close();
        const callId = call.id || `call_${this.#chatId ?? "llmgw"}_${position}`;
        out += this.#add({ kind: "call", index: position, item: { type: "function_call", id: `fc_${callId}`, call_id: callId, name: call.function?.name ?? "", arguments: "", status: "in_progress" } });
      }
      const fragment = call.function?.arguments;
      const current = this.#open as OpenItem & { kind: "call" };
      if (typeof fragment === "string" && fragment.length > 0) {
        current.item.arguments += fragment;
        out += this.#emit("response.function_call_arguments.delta", { item_id: current.item.id, output_index: this.#output.length, delta: fragment });
      }
    }
    if (choice.finish_reason === "length") this.#length = true;
    return out;
  }

  end(): string {
    return "";
  }

  #add(open: OpenItem): string {
    this.#open = open;
    return this.#emit("response.output_item.added", { output_index: this.#output.length, item: { ...open.item, ...(open.kind === "text" ? { content: [] } : {}) } });
  }

  /** Ends the open item: its done events, and it joins the output. */
  #close(): string {
    const open = this.#open;
    if (open === undefined) return "";
    this.#open = undefined;
    const outputIndex = this.#output.length;
    let out = "";
    if (open.kind === "text") {
      const part = open.item.content[0] ?? outputText("");
      out += this.#emit("response.output_text.done", { item_id: open.item.id, output_index: outputIndex, content_index: 0, text: part.text, logprobs: [] });
      out += this.#emit("response.content_part.done", { item_id: open.item.id, output_index: outputIndex, content_index: 0, part });
    } else {
      out += this.#emit("response.function_call_arguments.done", { item_id: open.item.id, output_index: outputIndex, arguments: open.item.arguments });
    }
    open.item.status = "completed";
    this.#output.push(open.item);
    return out + this.#emit("response.output_item.done", { output_index: outputIndex, item: open.item });
  }

  #finish(): string {
    this.#finished = true;
    let out = "";
    if (!this.#started) out += this.#emit("response.created", { response: this.#response("in_progress") });
    out += this.#close();
    const status = this.#length ? "incomplete" : "completed";
    return out + this.#emit(`response.${status}`, { response: this.#response(status) });
  }

  #response(status: "in_progress" | "completed" | "incomplete"): Record<string, unknown> {
    const usage = status === "in_progress" ? null : responsesUsage(this.#usage);
    return responseObject(this.request, { chatId: this.#chatId, created: this.#created, model: this.#model, status, output: [...this.#output], usage });
  }

  #emit(type: string, fields: Record<string, unknown>): string {
    const event = { type, sequence_number: this.#sequence, ...fields };
    this.#sequence += 1;
    return sseEvent(type, event);
  }
}
