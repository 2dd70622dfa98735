import { sseEvent } from "../sse-events.js";
import { readChatChunk, endingOf, type ChatUsage, type Ending } from "../chat-answer.js";
import { anthropicUsage, messageId, stopReasonOf } from "./messages-answer.js";

type OpenBlock = { kind: "text" } | { kind: "tool"; call: number; id: string };

/**
 * A chat completion stream as Anthropic's event sequence, event by event as
 * the engine's arrive: message_start and a ping with the first chunk; each
 * run of text, and each tool call, as a content block (start, deltas, stop);
 * then message_delta with the stop reason and usage, and message_stop. Tool
 * calls come one after another from the engines (each call's arguments
 * whole before the next), which is how Anthropic's blocks come too.
 */
export class MessagesStream {
  #started = false;
  #finished = false;
  #index = -1;
  #open: OpenBlock | undefined;
  #ending: Ending | undefined;
  #stopString: string | undefined;
  #usage: ChatUsage | undefined;

  constructor(
    private readonly requestedModel: string,
    private readonly stopSequences: readonly string[],
    /** The prompt's tokens for message_start: the gateway's count, or the engine's when its first chunk already reports usage. */
    private readonly inputTokens: number,
  ) {}

  /** The Anthropic events one chat stream event (its data) becomes. */
  event(data: string): string {
    if (this.#finished) return "";
    const chunk = readChatChunk(data);
    if (chunk === "done") return this.#finish();
    if (chunk === undefined) return "";
    if (chunk.error) {
      this.#finished = true;
      const message = `${chunk.error.code ? `${chunk.error.code}: ` : ""}${chunk.error.message ?? "the engine failed mid-answer"}`;
      return sseEvent("error", { type: "error", error: { type: "api_error", message } });
    }
    let out = "";
    if (!this.#started) {
      this.#started = true;
      const inputTokens = chunk.usage?.prompt_tokens ?? this.inputTokens;
      const message = { id: messageId(chunk.id), type: "message", role: "assistant", model: chunk.model ?? this.requestedModel, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: 0 } };
      out += sseEvent("message_start", { type: "message_start", message }) + sseEvent("ping", { type: "ping" });
    }
    if (chunk.usage) this.#usage = chunk.usage;
    // Anthropic's API has no `n`: the first choice is the answer.
    const choice = chunk.choices?.find((candidate) => (candidate.index ?? 0) === 0);
    if (!choice) return out;
    const text = choice.delta?.content;
    if (typeof text === "string" && text.length > 0) {
      if (this.#open?.kind !== "text") out += this.#startBlock({ kind: "text" }, { type: "text", text: "" });
      out += sseEvent("content_block_delta", { type: "content_block_delta", index: this.#index, delta: { type: "text_delta", text } });
    }
    for (const call of choice.delta?.tool_calls ?? []) {
      const position = call.index ?? 0;
      const open = this.#open;
      // A new call: another index, or (from an engine that numbers every call 0) another id.
      if (open?.kind !== "tool" || open.call !== position || (typeof call.id === "string" && call.id.length > 0 && call.id !== open.id)) {
        const id = call.id || `toolu_${chunk.id ?? "llmgw"}_${position}`;
        out += this.#startBlock({ kind: "tool", call: position, id }, { type: "tool_use", id, name: call.function?.name ?? "", input: {} });
      }
      const fragment = call.function?.arguments;
      if (typeof fragment === "string" && fragment.length > 0) {
        out += sseEvent("content_block_delta", { type: "content_block_delta", index: this.#index, delta: { type: "input_json_delta", partial_json: fragment } });
      }
    }
    if (choice.finish_reason) {
      this.#ending = endingOf(choice.finish_reason, choice.stop_reason, this.stopSequences);
      if (this.#ending === "stop_sequence") this.#stopString = String(choice.stop_reason);
    }
    return out;
  }

  /** What follows the stream's last event: nothing once [DONE] ended it; a stream that ended without it was cut, and the gateway's error event said so. */
  end(): string {
    return "";
  }

  #startBlock(block: OpenBlock, content: Record<string, unknown>): string {
    const closing = this.#closeBlock();
    this.#index += 1;
    this.#open = block;
    return closing + sseEvent("content_block_start", { type: "content_block_start", index: this.#index, content_block: content });
  }

  #closeBlock(): string {
    if (this.#open === undefined) return "";
    this.#open = undefined;
    return sseEvent("content_block_stop", { type: "content_block_stop", index: this.#index });
  }

  #finish(): string {
    this.#finished = true;
    let out = "";
    if (!this.#started) {
      const message = { id: messageId(undefined), type: "message", role: "assistant", model: this.requestedModel, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: this.inputTokens, output_tokens: 0 } };
      out += sseEvent("message_start", { type: "message_start", message });
    }
    out += this.#closeBlock();
    const ending = this.#ending ?? "stop";
    out += sseEvent("message_delta", {
      type: "message_delta",
      delta: { stop_reason: stopReasonOf(ending), stop_sequence: this.#stopString ?? null },
      usage: anthropicUsage(this.#usage),
    });
    return out + sseEvent("message_stop", { type: "message_stop" });
  }
}
